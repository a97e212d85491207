package kubectle2e

import (
	"net"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/podtrace/podtrace/engine/controlplane"
	"github.com/podtrace/podtrace/internal/waittest"
)

// serviceYAML is a ClusterIP Service selecting app=name on port 80.
func serviceYAML(name string) string {
	return `apiVersion: v1
kind: Service
metadata:
  name: ` + name + `
spec:
  selector: {app: ` + name + `}
  ports:
  - port: 80
    targetPort: 80
`
}

// TestServices applies a workshop manifest (Deployment + Service), reads
// the Service back as kubectl shows it, exposes a second Deployment, waits
// for the endpoints of the Ready pods, and checks that a deleted Service's
// cluster IP can be taken again.
func TestServices(t *testing.T) {
	eachKubectl(t, func(t *testing.T, _ *cluster, k *kubectl, suffix string) {
		testServiceLifecycle(t, k, "svc-"+suffix, "exp-"+suffix)
	})
}

func testServiceLifecycle(t *testing.T, k *kubectl, web, exposed string) {
	verbs := "create,delete,deletecollection,get,list,patch,update,watch"
	// Another test's CustomResourceDefinition may be coming or going, its
	// group in discovery a moment before or after its resources are: then
	// api-resources says it could not list them all, and a user runs it again.
	var listed string
	waittest.EventuallyEvery(t, "kubectl api-resources to list every group", poll, waitLong, func() (bool, string) {
		out, errOut, err := k.run("api-resources", "-o", "wide")
		listed = out
		return err == nil, errOut
	})
	resources := tableRows(listed)
	for name, cells := range map[string][]string{
		"services":       {"services", "svc", "v1", "true", "Service", verbs, "all"},
		"endpoints":      {"endpoints", "ep", "v1", "true", "Endpoints", verbs},
		"endpointslices": {"endpointslices", "discovery.k8s.io/v1", "true", "EndpointSlice", verbs},
	} {
		if got := rowFor(resources, 0, name); strings.Join(got, "|") != strings.Join(cells, "|") {
			t.Errorf("api-resources row %s = %q, want %q", name, got, cells)
		}
	}

	f := k.writeFile(web+".yaml", deploymentYAML(web, "nginx:1.27", 2)+"---\n"+serviceYAML(web))
	out := k.ok("apply", "-f", f)
	if want := "deployment.apps/" + web + " created\nservice/" + web + " created\n"; out != want {
		t.Fatalf("kubectl apply = %q, want %q", out, want)
	}

	rows := tableRows(k.ok("get", "svc"))
	if got := strings.Join(rows[0], "|"); got != "NAME|TYPE|CLUSTER-IP|EXTERNAL-IP|PORT(S)|AGE" {
		t.Fatalf("get svc header = %q", got)
	}
	if r := rowFor(tableRows(k.ok("get", "svc", "-n", "default")), 0, "kubernetes"); len(r) != 6 || r[1] != "ClusterIP" || r[2] != "10.96.0.1" || r[3] != "<none>" || r[4] != "443/TCP" {
		t.Errorf("kubernetes service row = %q", r)
	}
	// kube-apiserver's lease reconciler keeps its own endpoints, at its
	// advertised address in the pod network namespace.
	waittest.EventuallyEvery(t, "endpoints of the kubernetes service", poll, waitLong, func() (bool, string) {
		out, _, err := k.run("get", "endpoints", "kubernetes", "-n", "default", "-o", "jsonpath={.subsets[*].addresses[*].ip} {.subsets[*].ports[?(@.name==\"https\")].port}")
		return err == nil && regexp.MustCompile(`^`+regexp.QuoteMeta(controlplane.AdvertiseAddress)+` \d+$`).MatchString(out), out
	})
	r := rowFor(rows, 0, web)
	if len(r) != 6 || r[1] != "ClusterIP" || r[3] != "<none>" || r[4] != "80/TCP" {
		t.Fatalf("service row = %q", r)
	}
	ip := r[2]
	_, cidr, _ := net.ParseCIDR("10.96.0.0/12")
	if p := net.ParseIP(ip); p == nil || !cidr.Contains(p) || ip == "10.96.0.1" {
		t.Errorf("cluster IP %q is not a free address of 10.96.0.0/12", ip)
	}
	wide := tableRows(k.ok("get", "svc", web, "-o", "wide"))
	if got := strings.Join(wide[0], "|"); got != "NAME|TYPE|CLUSTER-IP|EXTERNAL-IP|PORT(S)|AGE|SELECTOR" || len(wide) < 2 || wide[1][6] != "app="+web {
		t.Errorf("get svc -o wide:\n%q", wide)
	}
	if all := k.ok("get", "all"); !regexp.MustCompile(`(?m)^service/` + web + `\s+ClusterIP\s+` + regexp.QuoteMeta(ip) + `\s`).MatchString(all) {
		t.Errorf("get all lacks service/%s:\n%s", web, all)
	}

	// describe shows the Ready pods' IPs once the EndpointSlice controller has them.
	k.ok("rollout", "status", "deployment/"+web, "--timeout=3m")
	podIPs := strings.Fields(k.ok("get", "pods", "-l", "app="+web, "-o", "jsonpath={.items[*].status.podIP}"))
	for i := range podIPs {
		podIPs[i] += ":80"
	}
	sort.Strings(podIPs)
	var desc string
	waittest.EventuallyEvery(t, "describe svc to list both endpoints", poll, waitLong, func() (bool, string) {
		desc = k.ok("describe", "svc", web)
		eps := strings.Split(describeField(desc, "Endpoints:"), ",")
		sort.Strings(eps)
		return strings.Join(eps, ",") == strings.Join(podIPs, ","), desc
	})
	for key, want := range map[string]string{"Name:": web, "Type:": "ClusterIP", "IP:": ip, "Port:": "<unset>  80/TCP",
		"TargetPort:": "80/TCP", "Selector:": "app=" + web, "Session Affinity:": "None", "IP Families:": "IPv4",
		"IP Family Policy:": "SingleStack"} {
		if got := describeField(desc, key); got != want {
			t.Errorf("describe svc: %s %q, want %q", key, got, want)
		}
	}
	if k.version >= "1.33" { // older kubectl does not print it
		if got := describeField(desc, "Internal Traffic Policy:"); got != "Cluster" {
			t.Errorf("describe svc: Internal Traffic Policy %q, want Cluster", got)
		}
	}
	// The legacy Endpoints object, which kubectl before 1.33 describes.
	eps := tableRows(k.ok("get", "endpoints", web))
	if len(eps) != 2 || strings.Join(eps[0], "|") != "NAME|ENDPOINTS|AGE" || eps[1][1] != strings.Join(podIPs, ",") {
		t.Errorf("get endpoints:\n%q, want %s", eps, strings.Join(podIPs, ","))
	}
	slices := tableRows(k.ok("get", "endpointslices", "-l", "kubernetes.io/service-name="+web))
	if len(slices) != 2 || !strings.HasPrefix(slices[1][0], web+"-") || slices[1][1] != "IPv4" || slices[1][2] != "80" {
		t.Errorf("get endpointslices:\n%q", slices)
	}

	// kubectl expose makes a Service from the Deployment's selector.
	k.ok("create", "deployment", exposed, "--image=nginx:1.27")
	if out := k.ok("expose", "deployment", exposed, "--port", "80"); strings.TrimSpace(out) != "service/"+exposed+" exposed" {
		t.Errorf("kubectl expose = %q", out)
	}
	if sel := k.ok("get", "svc", exposed, "-o", "jsonpath={.spec.selector.app}"); sel != exposed {
		t.Errorf("exposed service selector app=%q, want %q", sel, exposed)
	}

	// A taken address is refused with upstream's message; once the Service
	// is deleted, its address is free again.
	taken := "apiVersion: v1\nkind: Service\nmetadata:\n  name: " + web + "-again\nspec:\n  clusterIP: " + ip +
		"\n  selector: {app: " + web + "}\n  ports:\n  - port: 8080\n"
	again := k.writeFile(web+"-again.yaml", taken)
	errOut := k.fails("create", "-f", again)
	if want := `The Service "` + web + `-again" is invalid: spec.clusterIPs: Invalid value: ["` + ip + `"]: failed to allocate IP ` +
		ip + `: provided IP is already allocated`; !strings.Contains(errOut, want) {
		t.Errorf("create with a taken clusterIP:\n%s\nwant %s", errOut, want)
	}
	k.ok("delete", "svc", web)
	if out := k.ok("create", "-f", again); strings.TrimSpace(out) != "service/"+web+"-again created" {
		t.Errorf("create with the released clusterIP = %q", out)
	}
	waittest.EventuallyEvery(t, "the deleted service's EndpointSlices to go", poll, waitLong, func() (bool, string) {
		out := k.ok("get", "endpointslices", "-l", "kubernetes.io/service-name="+web, "-o", "name")
		return strings.TrimSpace(out) == "", out
	})
	k.ok("delete", "svc", web+"-again", exposed)
	k.ok("delete", "deployment", web, exposed)
}
