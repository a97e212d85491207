package kubectle2e

import (
	"regexp"
	"strings"
	"testing"

	"github.com/podtrace/podtrace/internal/waittest"
	"github.com/podtrace/podtrace/stages"
)

// TestWhatOnlyTheRealControlPlaneDoes checks, with real kubectl, behaviour
// that comes from kube-apiserver, kube-controller-manager and kube-scheduler
// themselves: volume binding in scheduling, impersonation, RBAC's escalation
// check, the workload controllers, CRDs and the whole API surface.
func TestWhatOnlyTheRealControlPlaneDoes(t *testing.T) {
	eachKubectl(t, func(t *testing.T, c *cluster, k *kubectl, suffix string) {
		testMissingPVCStaysPending(t, k, "claims-"+suffix)
		testImpersonation(t, k)
		testEscalation(t, k, "esc-"+suffix)
		testWorkloads(t, c, k, suffix)
		testCRD(t, k, suffix)
	})
}

func testMissingPVCStaysPending(t *testing.T, k *kubectl, name string) {
	k.apply(`apiVersion: v1
kind: Pod
metadata:
  name: ` + name + `
spec:
  containers:
  - name: c
    image: nginx:1.27
    volumeMounts: [{name: data, mountPath: /data}]
  volumes:
  - name: data
    persistentVolumeClaim: {claimName: nothere}
`)
	// N in "0/N nodes" counts the Nodes that tests running beside this
	// one may have added.
	want := regexp.MustCompile(`0/\d+ nodes are available: persistentvolumeclaim "nothere" not found\.`)
	waittest.EventuallyEvery(t, "FailedScheduling for the missing claim", poll, waitLong, func() (bool, string) {
		out := k.ok("get", "events", "--field-selector", "involvedObject.name="+name)
		return want.MatchString(out), out
	})
	if phase := k.ok("get", "pod", name, "-o", "jsonpath={.status.phase}"); phase != "Pending" {
		t.Errorf("pod phase %q, want Pending", phase)
	}
	k.ok("delete", "pod", name, "--wait=false")
}

func testImpersonation(t *testing.T, k *kubectl) {
	// The viewer may read the test's namespace (kubectl 1.27's auth whoami
	// asks for a selfsubjectreviews version 1.36 no longer serves).
	k.ok("get", "pods", "--as=viewer")
	errOut := k.fails("create", "configmap", "as-viewer", "--as=viewer")
	want := `configmaps is forbidden: User "viewer" cannot create resource "configmaps" in API group "" in the namespace "` + k.ns + `"`
	if !strings.Contains(errOut, want) {
		t.Errorf("create --as=viewer: %q, want %q", errOut, want)
	}
}

func testEscalation(t *testing.T, k *kubectl, name string) {
	k.ok("create", "role", name, "--verb=create,get", "--resource=rolebindings")
	k.ok("create", "rolebinding", name, "--role="+name, "--user="+name)
	waittest.EventuallyEvery(t, "the binding to take effect", poll, waitLong, func() (bool, string) {
		out, _, _ := k.run("auth", "can-i", "create", "rolebindings", "--as="+name)
		return strings.TrimSpace(out) == "yes", out
	})
	errOut := k.fails("create", "rolebinding", name+"-admin", "--clusterrole=cluster-admin", "--user="+name, "--as="+name)
	want := `is forbidden: user "` + name + `" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held`
	if !strings.Contains(errOut, want) {
		t.Errorf("escalation: %q, want %q", errOut, want)
	}
}

func testWorkloads(t *testing.T, c *cluster, k *kubectl, suffix string) {
	sts, ds, cj := "db-"+suffix, "agent-"+suffix, "tick-"+suffix
	k.apply(`apiVersion: apps/v1
kind: StatefulSet
metadata: {name: ` + sts + `}
spec:
  replicas: 2
  serviceName: ` + sts + `
  selector: {matchLabels: {app: ` + sts + `}}
  template:
    metadata: {labels: {app: ` + sts + `}}
    spec: {containers: [{name: db, image: nginx:1.27}]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ` + ds + `}
spec:
  selector: {matchLabels: {app: ` + ds + `}}
  template:
    metadata: {labels: {app: ` + ds + `}}
    spec: {containers: [{name: agent, image: nginx:1.27}]}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: ` + cj + `}
spec:
  schedule: "* * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: tick, image: busybox:1.36, command: ["sh", "-c", "echo tick; sleep 1"]}]
`)
	k.ok("rollout", "status", "statefulset/"+sts, "--timeout=3m")
	k.ok("rollout", "status", "daemonset/"+ds, "--timeout=3m")
	// The schedule's next minute may be up to a minute away: one watch,
	// as a user would keep open, rather than a get every poll.
	jobs := k.start("get", "jobs", "--watch", "-o", "jsonpath={.metadata.ownerReferences[0].name} {.status.succeeded}{\"\\n\"}")
	jobs.waitOutput(t, "a Job of the CronJob to complete", waitLong, func(out string) bool { return strings.Contains(out, cj+" 1\n") })
	jobs.stop()
	for _, owner := range []struct{ kind, name, pod string }{
		{stages.KindStatefulSet, sts, sts + "-0"}, {stages.KindDaemonSet, ds, ds + "-"}, {stages.KindCronJob, cj, cj + "-"}} {
		if len(c.stageEvents(func(e stages.Event) bool { return e.Kind == owner.kind && e.Namespace == k.ns && e.Pod == owner.name })) == 0 {
			t.Errorf("no lane events for %s %s", owner.kind, owner.name)
		}
		if len(c.stageEvents(func(e stages.Event) bool {
			return e.Kind == stages.KindPod && e.Namespace == k.ns && strings.HasPrefix(e.Pod, owner.pod) && e.Stage == stages.Reconcile && e.Status == stages.Succeeded
		})) == 0 {
			t.Errorf("no reconcile stage for the pods of %s %s", owner.kind, owner.name)
		}
	}
	k.ok("delete", "statefulset/"+sts, "daemonset/"+ds, "cronjob/"+cj, "--wait=false")
}

func testCRD(t *testing.T, k *kubectl, suffix string) {
	// kube-apiserver's own resources, which the hand-written server lacked.
	served := map[string]bool{}
	for _, row := range tableRows(k.ok("api-resources", "--no-headers")) {
		served[row[0]] = true
	}
	for _, r := range []string{"persistentvolumeclaims", "persistentvolumes", "storageclasses", "statefulsets", "daemonsets",
		"cronjobs", "customresourcedefinitions", "horizontalpodautoscalers", "poddisruptionbudgets", "ingresses",
		"networkpolicies", "priorityclasses", "controllerrevisions"} {
		if !served[r] {
			t.Errorf("kubectl api-resources does not list %s", r)
		}
	}
	group := "v" + suffix + ".podtrace.dev"
	k.apply(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.` + group + `}
spec:
  group: ` + group + `
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
`)
	k.ok("wait", "--for=condition=established", "crd/widgets."+group, "--timeout=3m")
	waittest.EventuallyEvery(t, "the custom resource to be applied", poll, waitLong, func() (bool, string) {
		out, errOut, err := k.run("apply", "-f", k.writeFile("widget.yaml", "apiVersion: "+group+"/v1\nkind: Widget\nmetadata: {name: w}\nspec: {size: 3}\n"))
		return err == nil, out + errOut
	})
	if out := k.ok("get", "widgets."+group, "w", "-o", "jsonpath={.spec.size}"); out != "3" {
		t.Errorf("widget size = %q", out)
	}
	k.ok("delete", "crd", "widgets."+group)
}

// apply applies a manifest from a file, as a user would.
func (k *kubectl) apply(manifest string) string {
	k.t.Helper()
	return k.ok("apply", "-f", k.writeFile("manifest.yaml", manifest))
}
