package kubectle2e

import (
	"net"
	"regexp"
	"strings"
	"testing"

	"github.com/podtrace/podtrace/internal/waittest"
	"github.com/podtrace/podtrace/stages"
)

// testRunLogs starts a pod that logs a line, waits, and logs another: logs
// prints what was written, logs -f streams the second line while it runs.
func testRunLogs(t *testing.T, c *cluster, k *kubectl, name string) {
	out := strings.TrimSpace(k.ok("run", name, "--image=busybox", "--", "sh", "-c", "echo one; sleep 4; echo two; sleep infinity"))
	if out != "pod/"+name+" created" {
		t.Errorf("kubectl run = %q", out)
	}
	k.ok("wait", "--for=condition=Ready", "pod/"+name, "--timeout=3m")
	f := k.start("logs", "-f", name)
	got := f.waitOutput(t, "the first line", waitLong, func(s string) bool { return strings.Contains(s, "one\n") })
	if strings.Contains(got, "two") {
		t.Logf("the second line was already written when logs -f started")
	}
	got = f.waitOutput(t, "the second line streamed by logs -f", waitLong, func(s string) bool { return strings.Contains(s, "two\n") })
	if f.exited() {
		t.Errorf("kubectl logs -f ended instead of following: %s", f.errOut.String())
	}
	f.stop()
	if !strings.Contains(got, "one\ntwo\n") {
		t.Errorf("kubectl logs -f = %q, want one then two", got)
	}
	if logs := k.ok("logs", name); !strings.Contains(logs, "one\ntwo\n") {
		t.Errorf("kubectl logs = %q", logs)
	}
	if logs := k.ok("logs", name, "--tail=1"); logs != "two\n" {
		t.Errorf("kubectl logs --tail=1 = %q, want two", logs)
	}
	evs := c.stageEvents(func(e stages.Event) bool {
		return e.Kind == stages.KindPod && e.Namespace == k.ns && e.Pod == name && e.Stage == stages.Authn && e.Verb == "create"
	})
	if len(evs) == 0 || evs[0].User != "kubernetes-admin" || !strings.Contains(evs[0].UserAgent, "v"+k.version+".") {
		t.Errorf("kubectl run's create has no authn stage event with the admin and kubectl %s: %+v", k.version, evs)
	}
}

func testDescribe(t *testing.T, k *kubectl, web, pod string) {
	out := k.ok("describe", "pod", pod)
	for key, want := range map[string]string{"Name:": pod, "Namespace:": k.ns, "Status:": "Running",
		"Image:": "busybox", "State:": "Running", "Ready:": "True", "Restart Count:": "0"} {
		if got := describeField(out, key); got != want {
			t.Errorf("describe pod: %s %q, want %q", key, got, want)
		}
	}
	if !regexp.MustCompile(`(?m)^\s+Normal\s+Scheduled\s+\S+\s+default-scheduler\s+Successfully assigned `+k.ns+`/`+pod+` to node-\d$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^\s+Normal\s+Started\s+\S+\s+kubelet\s+`).MatchString(out) {
		t.Errorf("describe pod lacks the Scheduled and Started events:\n%s", out)
	}
	out = k.ok("describe", "deployment", web)
	for key, want := range map[string]string{"Name:": web, "Replicas:": "1 desired | 1 updated | 1 total | 1 available | 0 unavailable",
		"StrategyType:": "RollingUpdate", "Image:": "nginx:1.28"} {
		if got := describeField(out, key); got != want {
			t.Errorf("describe deployment: %s %q, want %q", key, got, want)
		}
	}
	if !regexp.MustCompile(`(?m)^\s+Normal\s+ScalingReplicaSet\s+\S+\s+deployment-controller\s+Scaled up replica set ` + web + `-\w+ from 0 to 2$`).MatchString(out) {
		t.Errorf("describe deployment lacks the ScalingReplicaSet event:\n%s", out)
	}
	node := strings.TrimSpace(k.ok("get", "pod", pod, "-o", "jsonpath={.spec.nodeName}"))
	out = k.ok("describe", "node", node)
	if got := describeField(out, "Name:"); got != node {
		t.Errorf("describe node: Name %q", got)
	}
	if !regexp.MustCompile(`(?m)^\s+Ready\s+True\s`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^\s+`+k.ns+`\s+`+pod+`\s`).MatchString(out) || !strings.Contains(out, "Allocated resources:") {
		t.Errorf("describe node lacks the Ready condition, the pod or the allocation:\n%s", out)
	}
	// The node's pod range, which the pod's address comes from.
	ip := net.ParseIP(strings.TrimSpace(k.ok("get", "pod", pod, "-o", "jsonpath={.status.podIP}")))
	if _, cidr, err := net.ParseCIDR(describeField(out, "PodCIDR:")); err != nil || !cidr.Contains(ip) {
		t.Errorf("describe node: PodCIDR %q does not hold the pod's IP %s", describeField(out, "PodCIDR:"), ip)
	}
	// The kubelet's node events (Starting, NodeHasSufficientMemory, ...): the
	// real kubelet 1.36 writes them without involvedObject.uid, so kubectl
	// 1.27–1.33's describe node, which looks them up by uid, does not list
	// them, as on any 1.36 cluster; kubectl get events does.
	evs := k.ok("get", "events", "-n", "default", "--field-selector", "involvedObject.kind=Node,involvedObject.name="+node)
	if !regexp.MustCompile(`(?m)^\S+\s+Normal\s+Starting\s+node/` + node + `\s+Starting kubelet\.$`).MatchString(evs) {
		t.Errorf("kubectl get events shows none of node %s's kubelet events:\n%s", node, evs)
	}
}

// describeField is the value of the first "Key:  value" line of kubectl
// describe output, wherever it is indented.
func describeField(out, key string) string {
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), key); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func testAuth(t *testing.T, c *cluster, k *kubectl, name string) {
	if out := strings.TrimSpace(k.ok("auth", "can-i", "create", "deployments")); out != "yes" {
		t.Errorf("admin: auth can-i create deployments = %q", out)
	}
	if out := strings.TrimSpace(k.ok("auth", "can-i", "delete", "nodes")); out != "yes" {
		t.Errorf("admin: auth can-i delete nodes = %q", out)
	}
	viewer := []string{"--context", "podtrace-viewer"}
	if out := strings.TrimSpace(k.ok(append(viewer, "auth", "can-i", "list", "pods")...)); out != "yes" {
		t.Errorf("viewer: auth can-i list pods = %q", out)
	}
	out, _, err := k.run(append(viewer, "auth", "can-i", "create", "pods")...)
	if err == nil || strings.TrimSpace(out) != "no" {
		t.Errorf("viewer: auth can-i create pods = %q (err %v), want no and exit 1", out, err)
	}
	out, _, err = k.run(append(viewer, "auth", "can-i", "list", "pods", "-n", "kube-system")...)
	if err == nil || strings.TrimSpace(out) != "no" {
		t.Errorf("viewer: auth can-i list pods -n kube-system = %q (err %v), want no", out, err)
	}
	if rows := tableRows(k.ok(append(viewer, "get", "pods")...)); len(rows) < 2 || rows[0][0] != "NAME" {
		t.Errorf("viewer cannot read pods in %s: %q", k.ns, rows)
	}
	// podtrace's own grant: the viewer reads the default namespace.
	if out := strings.TrimSpace(k.ok(append(viewer, "auth", "can-i", "list", "pods", "-n", "default")...)); out != "yes" {
		t.Errorf("viewer: auth can-i list pods -n default = %q", out)
	}
	errOut := k.fails(append(viewer, "create", "deployment", name, "--image=nginx")...)
	want := `error: failed to create deployment: deployments.apps is forbidden: User "viewer" cannot create resource "deployments" in API group "apps" in the namespace "` + k.ns + `"`
	if strings.TrimSpace(errOut) != want {
		t.Errorf("viewer create deployment:\n got %q\nwant %q", strings.TrimSpace(errOut), want)
	}
	// kubectl auth whoami (SelfSubjectReview v1, which kubectl asks for from 1.28 on).
	if k.version != "1.27" {
		for _, tc := range []struct {
			args         []string
			user, groups string
		}{
			{nil, "kubernetes-admin", "[system:masters system:authenticated]"},
			{viewer, "viewer", "[system:authenticated]"},
		} {
			rows := tableRows(k.ok(append(tc.args, "auth", "whoami")...))
			if u, g := rowFor(rows, 0, "Username"), rowFor(rows, 0, "Groups"); len(u) != 2 || u[1] != tc.user || len(g) != 2 || g[1] != tc.groups {
				t.Errorf("auth whoami %v: %q", tc.args, rows)
			}
		}
	}
	f := k.writeFile(name+".yaml", deploymentYAML(name, "nginx:1.27", 1))
	errOut = k.fails(append(viewer, "apply", "-f", f)...)
	want = `Error from server (Forbidden): error when creating "` + f + `": deployments.apps is forbidden: User "viewer" cannot create resource "deployments" in API group "apps" in the namespace "` + k.ns + `"`
	if strings.TrimSpace(errOut) != want {
		t.Errorf("viewer apply:\n got %q\nwant %q", strings.TrimSpace(errOut), want)
	}
	// The refusal shows in the Deployment's lane: authz failed, for the viewer.
	denied := c.stageEvents(func(e stages.Event) bool {
		return e.Kind == stages.KindDeployment && e.Namespace == k.ns && e.Pod == name && e.Stage == stages.Authz && e.Status == stages.Failed
	})
	if len(denied) == 0 || denied[0].User != "viewer" || denied[0].Reason != "Forbidden" ||
		!strings.Contains(denied[0].Message, `User "viewer" cannot create resource "deployments"`) {
		t.Errorf("the viewer's refused create has no failed authz stage event: %+v", denied)
	}
	errOut = k.fails(append(viewer, "get", "pods", "-n", "kube-system")...)
	want = `Error from server (Forbidden): pods is forbidden: User "viewer" cannot list resource "pods" in API group "" in the namespace "kube-system"`
	if strings.TrimSpace(errOut) != want {
		t.Errorf("viewer get pods -n kube-system:\n got %q\nwant %q", strings.TrimSpace(errOut), want)
	}
}

// testFieldValidation applies manifests with an unknown field and a wrong
// type: kubectl asks the server to validate strictly and prints its 400.
func testFieldValidation(t *testing.T, k *kubectl, name string) {
	manifest := deploymentYAML(name, "nginx:1.27", 1)
	unknown := k.writeFile(name+"-unknown.yaml", strings.Replace(manifest, "  replicas: 1", "  replica: 1", 1))
	wrongType := k.writeFile(name+"-type.yaml", strings.Replace(manifest, "  replicas: 1", `  replicas: "two"`, 1))
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"apply", "-f", unknown}, `Error from server (BadRequest): error when creating "` + unknown +
			`": Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: unknown field "spec.replica"`},
		{[]string{"create", "-f", unknown}, `Error from server (BadRequest): error when creating "` + unknown +
			`": Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: unknown field "spec.replica"`},
		{[]string{"apply", "-f", wrongType}, `Error from server (BadRequest): error when creating "` + wrongType +
			`": Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32`},
	}
	for _, tc := range cases {
		if got := strings.TrimSpace(k.fails(tc.args...)); got != tc.want {
			t.Errorf("kubectl %s:\n got %q\nwant %q", strings.Join(tc.args, " "), got, tc.want)
		}
	}
	errOut := k.fails("get", "deployment", name)
	if want := `Error from server (NotFound): deployments.apps "` + name + `" not found`; strings.TrimSpace(errOut) != want {
		t.Errorf("a refused manifest left something behind: %q", errOut)
	}
	// --validate=warn: the server drops the field and says so in a Warning header.
	out, errOut, err := k.run("apply", "-f", unknown, "--validate=warn")
	if err != nil || strings.TrimSpace(out) != "deployment.apps/"+name+" created" ||
		strings.TrimSpace(errOut) != `Warning: unknown field "spec.replica"` {
		t.Errorf("apply --validate=warn: %v\nstdout %q\nstderr %q", err, out, errOut)
	}
	k.ok("delete", "deployment", name, "--wait")
}

// testDelete deletes and waits: when kubectl returns, the object is gone.
func testDelete(t *testing.T, k *kubectl, web, pod, created string) {
	// The pod's shell ignores SIGTERM as PID 1: a short grace period keeps the test quick.
	if out := strings.TrimSpace(k.ok("delete", "pod", pod, "--wait", "--grace-period=2", "--timeout=3m")); out != `pod "`+pod+`" deleted` {
		t.Errorf("kubectl delete pod = %q", out)
	}
	if errOut := strings.TrimSpace(k.fails("get", "pod", pod)); errOut != `Error from server (NotFound): pods "`+pod+`" not found` {
		t.Errorf("pod still there after delete --wait: %q", errOut)
	}
	for _, d := range []string{web, created} {
		if out := strings.TrimSpace(k.ok("delete", "deployment", d, "--wait", "--timeout=3m")); out != `deployment.apps "`+d+`" deleted` {
			t.Errorf("kubectl delete deployment = %q", out)
		}
		if errOut := strings.TrimSpace(k.fails("get", "deployment", d)); errOut != `Error from server (NotFound): deployments.apps "`+d+`" not found` {
			t.Errorf("deployment still there after delete --wait: %q", errOut)
		}
	}
	waittest.EventuallyEvery(t, "the deployments' pods gone", poll, waitLong, func() (bool, string) {
		out, errOut, _ := k.run("get", "pods", "-l", "app in ("+web+","+created+")")
		return strings.TrimSpace(out) == "" && strings.Contains(errOut, "No resources found in "+k.ns+" namespace."), out + errOut
	})
}

// testNonRootPod runs a pod as user 1000 with group 2000: the kubelet gives
// it its service account token as that user, and the pod runs, as on any
// cluster (in a user namespace that maps only root, the chown fails and the
// pod stays ContainerCreating).
func testNonRootPod(t *testing.T, k *kubectl, name string) {
	k.apply(`apiVersion: v1
kind: Pod
metadata:
  name: ` + name + `
spec:
  securityContext: {runAsUser: 1000, runAsGroup: 2000, runAsNonRoot: true, fsGroup: 2000}
  containers:
  - name: app
    image: nginx:1.27
`)
	if out, errOut, err := k.run("wait", "--for=condition=Ready", "pod/"+name, "--timeout=3m"); err != nil {
		t.Fatalf("pod running as user 1000 not Ready: %v %s\n%s", err, errOut, k.ok("describe", "pod", name))
	} else if out != "pod/"+name+" condition met\n" {
		t.Errorf("wait = %q", out)
	}
	k.ok("delete", "pod", name, "--wait=false")
}
