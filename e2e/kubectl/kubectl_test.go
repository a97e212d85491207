package kubectle2e

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/podtrace/podtrace/internal/waittest"
	"github.com/podtrace/podtrace/stages"
)

func deploymentYAML(name, image string, replicas int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
spec:
  replicas: %[3]d
  selector:
    matchLabels: {app: %[1]s}
  template:
    metadata:
      labels: {app: %[1]s}
    spec:
      containers:
      - name: web
        image: %[2]s
`, name, image, replicas)
}

// TestKubectl runs every case of issue 6 with each kubectl release, side by
// side in namespaces of their own on the package's cluster.
func TestKubectl(t *testing.T) {
	eachKubectl(t, func(t *testing.T, c *cluster, k *kubectl, suffix string) {
		web := "web-" + suffix
		// Every step but describe creates what later steps use.
		steps := []struct {
			name string
			run  func(t *testing.T)
		}{
			{"version", func(t *testing.T) { testVersion(t, k) }},
			{"api-resources", func(t *testing.T) { testAPIResources(t, k) }},
			{"explain", func(t *testing.T) { testExplain(t, k) }},
			{"apply create", func(t *testing.T) { testApplyCreate(t, c, k, web) }},
			{"get", func(t *testing.T) { testGet(t, k, web) }},
			{"get -w and scale", func(t *testing.T) { testWatchScale(t, c, k, web) }},
			{"apply update", func(t *testing.T) { testApplyUpdate(t, c, k, web) }},
			{"create deployment", func(t *testing.T) { testCreateDeployment(t, k, "cd-"+suffix) }},
			{"run, logs, logs -f", func(t *testing.T) { testRunLogs(t, c, k, "ticker-"+suffix) }},
			{"describe", func(t *testing.T) { testDescribe(t, k, web, "ticker-"+suffix) }},
			{"auth can-i and 403", func(t *testing.T) { testAuth(t, c, k, "denied-"+suffix) }},
			{"field validation", func(t *testing.T) { testFieldValidation(t, k, "bad-"+suffix) }},
			{"a non-root pod", func(t *testing.T) { testNonRootPod(t, k, "nonroot-"+suffix) }},
			{"delete --wait", func(t *testing.T) { testDelete(t, k, web, "ticker-"+suffix, "cd-"+suffix) }},
		}
		for _, s := range steps {
			if !t.Run(s.name, s.run) && s.name != "describe" {
				t.Fatalf("step %q failed; later steps depend on it", s.name)
			}
		}
	})
}

func testVersion(t *testing.T, k *kubectl) {
	out := k.ok("version")
	if !regexp.MustCompile(`(?m)^Server Version: .*v1\.36\.3`).MatchString(out) {
		t.Errorf("kubectl version does not report server v1.36.3:\n%s", out)
	}
	if !strings.Contains(out, "Client Version: ") || !strings.Contains(out, "v"+k.version+".") {
		t.Errorf("kubectl version does not report client %s:\n%s", k.version, out)
	}
}

func testAPIResources(t *testing.T, k *kubectl) {
	rows := tableRows(k.ok("api-resources", "-o", "wide"))
	if got := strings.Join(rows[0], " "); !strings.HasPrefix(got, "NAME SHORTNAMES APIVERSION NAMESPACED KIND VERBS") {
		t.Errorf("api-resources header = %q", got)
	}
	verbs := "create,delete,deletecollection,get,list,patch,update,watch"
	want := map[string][]string{
		"pods":        {"pods", "po", "v1", "true", "Pod", verbs, "all"},
		"deployments": {"deployments", "deploy", "apps/v1", "true", "Deployment", verbs, "all"},
		"replicasets": {"replicasets", "rs", "apps/v1", "true", "ReplicaSet", verbs, "all"},
		"nodes":       {"nodes", "no", "v1", "false", "Node", verbs},
		"events":      {"events", "ev", "v1", "true", "Event", verbs},
		"leases":      {"leases", "coordination.k8s.io/v1", "true", "Lease", verbs},
		"selfsubjectaccessreviews": {"selfsubjectaccessreviews", "authorization.k8s.io/v1", "false",
			"SelfSubjectAccessReview", "create"},
	}
	for name, cells := range want {
		got := rowFor(rows, 0, name)
		if strings.Join(got, "|") != strings.Join(cells, "|") {
			t.Errorf("api-resources row %s = %q, want %q", name, got, cells)
		}
	}
}

func testExplain(t *testing.T, k *kubectl) {
	out := k.ok("explain", "pod.spec.containers")
	for _, want := range []string{
		"KIND:       Pod", "VERSION:    v1", "FIELD: containers <[]Container>",
		"List of containers belonging to the pod.",
		"  name\t<string> -required-",
		"  image\t<string>",
		"  resources\t<ResourceRequirements>",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl explain pod.spec.containers lacks %q:\n%s", want, out)
		}
	}
}

func testApplyCreate(t *testing.T, c *cluster, k *kubectl, web string) {
	f := k.writeFile(web+".yaml", deploymentYAML(web, "nginx:1.27", 2))
	if out := k.ok("apply", "-f", f); strings.TrimSpace(out) != "deployment.apps/"+web+" created" {
		t.Errorf("kubectl apply = %q, want deployment.apps/%s created", out, web)
	}
	out := k.ok("rollout", "status", "deployment/"+web, "--timeout=3m")
	if !strings.Contains(out, `deployment "`+web+`" successfully rolled out`) {
		t.Errorf("rollout status:\n%s", out)
	}
	// The request appears in the Deployment's lane with who made it and with what.
	evs := c.stageEvents(func(e stages.Event) bool {
		return e.Kind == stages.KindDeployment && e.Namespace == k.ns && e.Pod == web && e.Stage == stages.Authn && e.Verb == "create"
	})
	if len(evs) == 0 {
		t.Fatalf("no authn stage event for the create of deployment %s", web)
	}
	if e := evs[0]; e.User != "kubernetes-admin" || !strings.HasPrefix(e.UserAgent, "kubectl") ||
		!strings.Contains(e.UserAgent, "v"+k.version+".") {
		t.Errorf("authn event user %q agent %q, want kubernetes-admin and kubectl %s", e.User, e.UserAgent, k.version)
	}
}

func testGet(t *testing.T, k *kubectl, web string) {
	// Pods, wide: kube-apiserver's columns and printPod's STATUS.
	rows := tableRows(k.ok("get", "pods", "-l", "app="+web, "-o", "wide"))
	if got := strings.Join(rows[0], "|"); got != "NAME|READY|STATUS|RESTARTS|AGE|IP|NODE|NOMINATED NODE|READINESS GATES" {
		t.Errorf("get pods -o wide header = %q", got)
	}
	if len(rows) != 3 {
		t.Fatalf("get pods -o wide: want 2 pods, got %q", rows[1:])
	}
	for _, r := range rows[1:] {
		if len(r) != 9 || !strings.HasPrefix(r[0], web+"-") || r[1] != "1/1" || r[2] != "Running" || r[3] != "0" ||
			!strings.HasPrefix(r[5], "10.244.") || !strings.HasPrefix(r[6], "node-") || r[7] != "<none>" || r[8] != "<none>" {
			t.Errorf("pod row %q", r)
		}
	}
	// Sorting on a field outside metadata needs the whole objects in the table.
	rows = tableRows(k.ok("get", "pods", "-A", "-o", "wide", "--sort-by=.spec.nodeName"))
	var nodesInOrder []string
	for _, r := range rows[1:] {
		if len(r) >= 8 {
			nodesInOrder = append(nodesInOrder, r[7])
		}
	}
	if len(nodesInOrder) < 2 || !sort.StringsAreSorted(nodesInOrder) {
		t.Errorf("get pods --sort-by=.spec.nodeName: nodes in order %q", nodesInOrder)
	}
	// All namespaces adds the NAMESPACE column.
	rows = tableRows(k.ok("get", "pods", "-A"))
	if got := strings.Join(rows[0], "|"); got != "NAMESPACE|NAME|READY|STATUS|RESTARTS|AGE" {
		t.Errorf("get pods -A header = %q", got)
	}
	rows = tableRows(k.ok("get", "deploy", "-A", "-o", "wide"))
	if got := strings.Join(rows[0], "|"); got != "NAMESPACE|NAME|READY|UP-TO-DATE|AVAILABLE|AGE|CONTAINERS|IMAGES|SELECTOR" {
		t.Errorf("get deploy -A -o wide header = %q", got)
	}
	if r := rowFor(rows, 1, web); len(r) != 9 || r[0] != k.ns || r[2] != "2/2" || r[3] != "2" || r[4] != "2" ||
		r[6] != "web" || r[7] != "nginx:1.27" || r[8] != "app="+web {
		t.Errorf("deployment row %q", r)
	}
	rows = tableRows(k.ok("get", "rs", "-A", "-o", "wide"))
	if got := strings.Join(rows[0], "|"); got != "NAMESPACE|NAME|DESIRED|CURRENT|READY|AGE|CONTAINERS|IMAGES|SELECTOR" {
		t.Errorf("get rs -A -o wide header = %q", got)
	}
	found := false
	for _, r := range rows[1:] {
		if len(r) == 9 && strings.HasPrefix(r[1], web+"-") {
			found = true
			if r[2] != "2" || r[3] != "2" || r[4] != "2" || r[7] != "nginx:1.27" || !strings.HasPrefix(r[8], "app="+web+",pod-template-hash=") {
				t.Errorf("replicaset row %q", r)
			}
		}
	}
	if !found {
		t.Errorf("no ReplicaSet of %s in:\n%q", web, rows)
	}
	rows = tableRows(k.ok("get", "nodes", "-o", "wide"))
	if got := strings.Join(rows[0], "|"); got != "NAME|STATUS|ROLES|AGE|VERSION|INTERNAL-IP|EXTERNAL-IP|OS-IMAGE|KERNEL-VERSION|CONTAINER-RUNTIME" {
		t.Errorf("get nodes -o wide header = %q", got)
	}
	for _, n := range []string{"node-1", "node-2", "node-3"} {
		if r := rowFor(rows, 0, n); len(r) < 5 || r[1] != "Ready" || r[2] != "<none>" || r[4] != "v1.36.3" {
			t.Errorf("node row %q", r)
		}
	}
	rows = tableRows(k.ok("get", "events", "-A"))
	if got := strings.Join(rows[0], "|"); got != "NAMESPACE|LAST SEEN|TYPE|REASON|OBJECT|MESSAGE" {
		t.Errorf("get events -A header = %q", got)
	}
	if !hasRow(rows, func(r []string) bool {
		return len(r) == 6 && r[2] == "Normal" && r[3] == "ScalingReplicaSet" && r[4] == "deployment/"+web &&
			strings.HasPrefix(r[5], "Scaled up replica set "+web+"-") && strings.HasSuffix(r[5], " from 0 to 2")
	}) {
		t.Errorf("get events -A has no ScalingReplicaSet row for %s:\n%q", web, rows)
	}
	rows = tableRows(k.ok("get", "events", "-o", "wide", "--field-selector", "involvedObject.kind=Pod"))
	if got := strings.Join(rows[0], "|"); got != "LAST SEEN|TYPE|REASON|OBJECT|SUBOBJECT|SOURCE|MESSAGE|FIRST SEEN|COUNT|NAME" {
		t.Errorf("get events -o wide header = %q", got)
	}
	if !hasRow(rows, func(r []string) bool {
		// SOURCE is kube-scheduler's reporting controller and instance
		// ("default-scheduler, default-scheduler-<host>").
		return len(r) >= 8 && r[2] == "Scheduled" && strings.HasPrefix(r[4], "default-scheduler") && strings.HasPrefix(r[5], "Successfully assigned "+k.ns+"/"+web+"-")
	}) {
		t.Errorf("get events -o wide has no Scheduled row for %s:\n%q", web, rows)
	}

	// JSON and YAML are the stored objects.
	var list struct {
		Kind  string `json:"kind"`
		Items []struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Spec struct {
				NodeName string `json:"nodeName"`
			} `json:"spec"`
			Status struct {
				Phase string `json:"phase"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(k.ok("get", "pods", "-l", "app="+web, "-o", "json")), &list); err != nil {
		t.Fatalf("get pods -o json: %v", err)
	}
	if list.Kind != "List" || len(list.Items) != 2 {
		t.Errorf("get pods -o json: kind %q with %d items", list.Kind, len(list.Items))
	}
	for _, p := range list.Items {
		if p.Kind != "Pod" || !strings.HasPrefix(p.Metadata.Name, web+"-") || p.Status.Phase != "Running" || p.Spec.NodeName == "" {
			t.Errorf("get pods -o json item %+v", p)
		}
	}
	y := k.ok("get", "deploy", web, "-o", "yaml")
	for _, want := range []string{"apiVersion: apps/v1", "kind: Deployment", "  name: " + web, "  replicas: 2",
		"  - image: nginx:1.27", "  readyReplicas: 2", "kubectl.kubernetes.io/last-applied-configuration"} {
		if !strings.Contains(y, want) {
			t.Errorf("get deploy -o yaml lacks %q:\n%s", want, y)
		}
	}
	for _, args := range [][]string{{"get", "nodes", "-o", "yaml"}, {"get", "rs", "-A", "-o", "yaml"}, {"get", "events", "-A", "-o", "json"}} {
		if out := k.ok(args...); !strings.Contains(out, "List") || !strings.Contains(out, "items") {
			t.Errorf("kubectl %s printed no list:\n%.400s", strings.Join(args, " "), out)
		}
	}
}

func hasRow(rows [][]string, match func([]string) bool) bool {
	for _, r := range rows {
		if match(r) {
			return true
		}
	}
	return false
}

// testWatchScale watches the pods while the Deployment scales to 3: the
// watch prints the header once, then one row per change of the new pod
// until it is Running.
func testWatchScale(t *testing.T, c *cluster, k *kubectl, web string) {
	w := k.start("get", "pods", "-l", "app="+web, "-w")
	w.waitOutput(t, "the initial pods", waitLong, func(s string) bool { return strings.Count(s, "Running") >= 2 })
	if out := strings.TrimSpace(k.ok("scale", "deployment/"+web, "--replicas=3")); out != "deployment.apps/"+web+" scaled" {
		t.Errorf("kubectl scale = %q", out)
	}
	out := w.waitOutput(t, "a third pod Running in the watch", waitLong, func(s string) bool {
		return strings.Count(s, "Running") >= 3
	})
	if w.exited() {
		t.Errorf("kubectl get -w exited: %s", w.errOut.String())
	}
	w.stop()
	rows := tableRows(out)
	if got := strings.Join(rows[0], "|"); got != "NAME|READY|STATUS|RESTARTS|AGE" {
		t.Errorf("get pods -w header = %q", got)
	}
	if n := strings.Count(out, "NAME"); n != 1 {
		t.Errorf("get pods -w printed the header %d times:\n%s", n, out)
	}
	statuses := map[string][]string{}
	for _, r := range rows[1:] {
		if len(r) == 5 {
			statuses[r[0]] = append(statuses[r[0]], r[2])
		}
	}
	if len(statuses) != 3 {
		t.Errorf("get pods -w saw pods %v, want 3", statuses)
	}
	sawNew := false
	for _, s := range statuses {
		if len(s) >= 2 && s[0] == "Pending" && s[len(s)-1] == "Running" {
			sawNew = true
		}
	}
	if !sawNew {
		t.Errorf("get pods -w did not follow the new pod from Pending to Running:\n%s", out)
	}
	// kubectl scale writes the scale subresource: the Deployment's lane shows
	// who asked and the new replica count.
	authn := c.stageEvents(func(e stages.Event) bool {
		return e.Kind == stages.KindDeployment && e.Namespace == k.ns && e.Pod == web && e.Stage == stages.Authn && e.Verb == "patch" && e.Status == stages.Succeeded
	})
	persist := c.stageEvents(func(e stages.Event) bool {
		return e.Kind == stages.KindDeployment && e.Namespace == k.ns && e.Pod == web && e.Stage == stages.Persist && e.Reason == "Scaled" && e.Status == stages.Succeeded
	})
	if len(authn) != 1 || authn[0].User != "kubernetes-admin" || !strings.HasPrefix(authn[0].UserAgent, "kubectl") {
		t.Errorf("kubectl scale: authn events %+v, want one by kubernetes-admin with kubectl", authn)
	}
	if len(persist) != 1 || persist[0].Message != "spec.replicas set to 3" || persist[0].User != "kubernetes-admin" {
		t.Errorf("kubectl scale: persist events %+v", persist)
	}
	k.ok("rollout", "status", "deployment/"+web, "--timeout=3m")
	if out := k.ok("get", "deploy", web); !strings.Contains(out, " 3/3 ") {
		t.Errorf("kubectl get deploy after the rollout, want 3/3 ready:\n%s", out)
	}
}

// testApplyUpdate changes the image and the replica count with apply.
func testApplyUpdate(t *testing.T, c *cluster, k *kubectl, web string) {
	// Scaled to 3 by hand since; the manifest goes from 2 to 1 replica.
	f := k.writeFile(web+".yaml", deploymentYAML(web, "nginx:1.28", 1))
	if out := strings.TrimSpace(k.ok("apply", "-f", f)); out != "deployment.apps/"+web+" configured" {
		t.Errorf("kubectl apply (update) = %q", out)
	}
	if out := k.ok("rollout", "status", "deployment/"+web, "--timeout=3m"); !strings.Contains(out, `deployment "`+web+`" successfully rolled out`) {
		t.Errorf("rollout status after update:\n%s", out)
	}
	waittest.EventuallyEvery(t, "1 pod, on nginx:1.28", poll, waitLong, func() (bool, string) {
		out := k.ok("get", "pods", "-l", "app="+web, "-o", "jsonpath={range .items[*]}{.spec.containers[0].image} {.status.phase}{\"\\n\"}{end}")
		return strings.TrimSpace(out) == "nginx:1.28 Running", out
	})
	rows := tableRows(k.ok("get", "rs", "-l", "app="+web))
	if len(rows) != 3 {
		t.Fatalf("want the old and the new ReplicaSet, got %q", rows)
	}
	desired := []string{rows[1][1], rows[2][1]}
	if !(desired[0] == "0" && desired[1] == "1") && !(desired[0] == "1" && desired[1] == "0") {
		t.Errorf("ReplicaSets desired %v, want 1 and 0", desired)
	}
	evs := c.stageEvents(func(e stages.Event) bool {
		return e.Kind == stages.KindDeployment && e.Namespace == k.ns && e.Pod == web && e.Stage == stages.Authn && e.Verb == "patch"
	})
	if len(evs) == 0 || evs[0].User != "kubernetes-admin" || !strings.HasPrefix(evs[0].UserAgent, "kubectl") {
		t.Errorf("apply's patch of %s has no authn stage event with the admin and kubectl: %+v", web, evs)
	}
}

func testCreateDeployment(t *testing.T, k *kubectl, name string) {
	if out := strings.TrimSpace(k.ok("create", "deployment", name, "--image=nginx:1.27")); out != "deployment.apps/"+name+" created" {
		t.Errorf("kubectl create deployment = %q", out)
	}
	k.ok("rollout", "status", "deployment/"+name, "--timeout=3m")
	if r := rowFor(tableRows(k.ok("get", "deploy", name)), 0, name); len(r) != 5 || r[1] != "1/1" {
		t.Errorf("created deployment row %q", r)
	}
}
