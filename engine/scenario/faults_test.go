package scenario

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/apply"
	"github.com/podtrace/podtrace/engine/enginetest"
	"github.com/podtrace/podtrace/engine/logs"
	"github.com/podtrace/podtrace/engine/nodes"
	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/internal/testproc"
	"github.com/podtrace/podtrace/internal/waittest"
	"github.com/podtrace/podtrace/stages"
)

// startEngine runs a cluster of n nodes whose simulated runtime's latency
// model runs at speed, and keeps its nodes in step with node-not-ready
// faults.
func startEngine(t *testing.T, n int, speed float64) *engine.Engine {
	t.Helper()
	logs.To(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	e, err := engine.Start(ctx, engine.Config{DataDir: enginetest.DataDir(t), UnsafeNoFsync: true, Nodes: nodes.Defaults(n), Speed: speed, Seed: 1})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); e.Close() })
	if err := waitNodes(ctx, e, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	return e
}

func deploymentYAML(name string, replicas int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s, namespace: default}
spec:
  replicas: %[2]d
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      containers:
      - name: web
        image: "nginx:1.27"
        ports: [{containerPort: 8080}]
        lifecycle: {postStart: {exec: {command: [sh, -c, "echo started"]}}}
        readinessProbe: {httpGet: {path: /, port: 8080}, periodSeconds: 1}
`, name, replicas)
}

// poll is how often a test asks again for what it waits for.
const poll = 50 * time.Millisecond

// stageFault is one fault of TestEveryStageFaultBreaksAndRecovers and what
// it shows while active.
type stageFault struct {
	fault    string
	applyErr string        // the error kubectl apply gets, for API stages
	see      Expectation   // the stage event showing the failure
	waiting  string        // a container waiting reason while broken
	cond     string        // a pod condition "Type=Status/Reason" while broken
	event    string        // a Kubernetes Event reason while broken (kubectl describe)
	recovery time.Duration // how long Ready may take once the fault goes: 30 s unless set
}

// stageFaultGroups are the faults, one cluster per group: a fault acts on
// its whole cluster, so one group's faults take turns, and the groups run
// side by side, each in a process of its own.
var stageFaultGroups = []struct {
	name   string
	faults []stageFault
}{
	{"api", []stageFault{
		{fault: "authn:fail:expired-token", applyErr: "Unauthorized",
			see: Expectation{Stage: stages.Authn, Status: stages.Failed, Message: "Unauthorized"}},
		{fault: "authz:fail:rbac-lost",
			see: Expectation{Stage: stages.Authz, Status: stages.Failed,
				Message: `replicasets.apps is forbidden: User "system:serviceaccount:kube-system:deployment-controller" cannot create resource "replicasets" in API group "apps" in the namespace "default"`}},
		{fault: "admission:fail:webhook-deny", applyErr: `admission webhook "deny.podtrace.dev" denied the request`,
			see: Expectation{Stage: stages.Admission, Status: stages.Failed, Message: `admission webhook "deny.podtrace.dev" denied the request`}},
		{fault: "persist:fail:etcd-timeout", applyErr: "etcdserver: request timed out",
			see: Expectation{Stage: stages.Persist, Status: stages.Failed, Message: "etcdserver: request timed out"}},
		{fault: "reconcile:fail:quota",
			see: Expectation{Stage: stages.Reconcile, Status: stages.Retrying, Message: "is forbidden: exceeded quota: podtrace-fault"}},
		{fault: "reconcile:fail:controller-down",
			see: Expectation{Stage: stages.Reconcile, Status: stages.Waiting, Reason: "Hang"}},
	}},
	{"scheduling", []stageFault{
		{fault: "schedule:fail:unschedulable", cond: "PodScheduled=False/Unschedulable",
			see: Expectation{Stage: stages.Schedule, Status: stages.Retrying, Reason: "FailedScheduling", Message: "0/3 nodes are available: 3 node(s) were unschedulable."}},
		{fault: "bind:fail:conflict", cond: "PodScheduled=False/SchedulerError",
			see: Expectation{Stage: stages.Bind, Status: stages.Retrying, Reason: "FailedScheduling", Message: "Operation cannot be fulfilled on pods/binding"}},
		{fault: "kubelet:delay:2s",
			see: Expectation{Stage: stages.Kubelet, Status: stages.Waiting, Reason: "Delay"}},
		{fault: "sandbox:fail:runtime-error", event: "FailedCreatePodSandBox",
			see: Expectation{Stage: stages.Sandbox, Status: stages.Retrying, Reason: "FailedCreatePodSandBox", Message: "OCI runtime create failed"}},
		{fault: "cni:fail:plugin-error", event: "FailedCreatePodSandBox",
			see: Expectation{Stage: stages.CNI, Status: stages.Retrying, Reason: "FailedCreatePodSandBox", Message: `failed to setup network for sandbox`}},
	}},
	// The unreachable registry's recovery waits out the kubelet's image
	// pull back-off, the longest of all: by the time ImagePullBackOff shows,
	// two pulls may have failed, so the next waits 20 s, then for the pod
	// worker's next sync (every 10-15 s while it backs off).
	{"pull", []stageFault{
		{fault: "pull:fail:unreachable", waiting: "ImagePullBackOff", recovery: 75 * time.Second,
			see: Expectation{Stage: stages.Pull, Reason: "ErrImagePull", Message: "dial tcp 104.18.0.1:443: i/o timeout"}},
		{fault: "pull:fail:slow", // the slow registry: the pull waits (a 45 s delay), until the fault goes
			see: Expectation{Stage: stages.Pull, Status: stages.Waiting, Reason: "Delay"}},
	}},
	{"containers", []stageFault{
		{fault: "create:fail:create-error", waiting: "CreateContainerError",
			see: Expectation{Stage: stages.Create, Reason: "CreateContainerError", Message: "failed to create containerd container"}},
		{fault: "start:flake:2,crash",
			see: Expectation{Stage: stages.Start, Reason: "RunContainerError", Message: "executable file not found in $PATH"}},
		{fault: "hooks:fail:exit-1",
			see: Expectation{Stage: stages.Hooks, Reason: "FailedPostStartHook", Message: "Exec lifecycle hook ([sh -c"}},
		{fault: "ready:fail:never-ready", cond: "Ready=False/"},
	}},
}

// TestEveryStageFaultBreaksAndRecovers injects, for every lifecycle stage,
// one fault (every variant kind appears: fail, delay, hang, flake), sees the
// stage's realistic failure in the stage events and in what kubectl shows
// (the API error, a pod condition or a container's waiting reason), removes
// the fault and sees the deployment become Ready.
func TestEveryStageFaultBreaksAndRecovers(t *testing.T) {
	seenStage := map[stages.ID]bool{}
	for _, g := range stageFaultGroups {
		for _, tt := range g.faults {
			seenStage[parseStageFault(t, tt.fault).Stage] = true
		}
	}
	for _, id := range stages.Lifecycle {
		if !seenStage[id] {
			t.Errorf("no fault tested at stage %s", id)
		}
	}
	for _, g := range stageFaultGroups {
		t.Run(g.name, func(t *testing.T) {
			if testproc.OwnProcess(t) {
				return
			}
			e := startEngine(t, 3, 20)
			a, err := apply.New(e.AdminConfig())
			if err != nil {
				t.Fatal(err)
			}
			rec := e.Hub.Record()
			defer rec.Stop()
			for _, tt := range g.faults {
				t.Run(tt.fault, func(t *testing.T) { breakAndRecover(t, e, a, rec, tt) })
			}
		})
	}
}

// parseStageFault parses a fault of the table, its variant resolved.
func parseStageFault(t *testing.T, s string) stages.Fault {
	t.Helper()
	f, err := stages.ParseFault(s)
	if err == nil {
		f, err = stages.ResolveVariant(f)
	}
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// breakAndRecover applies a one-replica Deployment, named after the fault,
// while tt's fault is active, sees what tt says it shows, removes the fault
// and waits for the Deployment to be Ready.
func breakAndRecover(t *testing.T, e *engine.Engine, a *apply.Applier, rec *trace.Recording, tt stageFault) {
	ctx := context.Background()
	c := e.AdminClient()
	f := parseStageFault(t, tt.fault)
	name := "f-" + strings.NewReplacer(":", "-", ",", "-", "/", "-", "@", "-").Replace(tt.fault)
	added := e.Tracer.Faults.Add(f)
	t.Cleanup(func() { e.Tracer.Faults.Remove(added.ID) })
	_, err := a.Apply(ctx, []byte(deploymentYAML(name, 1)), name)
	if tt.applyErr != "" {
		if err == nil || !strings.Contains(err.Error(), tt.applyErr) {
			t.Fatalf("apply error %v, want %q", err, tt.applyErr)
		}
	} else if err != nil {
		t.Fatalf("apply: %v", err)
	}
	if tt.see.Stage != "" {
		waittest.EventuallyEvery(t, "stage event "+tt.see.String(), poll, 20*time.Second, func() (bool, string) {
			return observeName(rec, name, tt.see), lastProblem(rec.Events())
		})
	}
	if tt.waiting != "" || tt.cond != "" {
		waittest.EventuallyEvery(t, "pod status "+tt.waiting+tt.cond, poll, 20*time.Second, func() (bool, string) {
			return podShows(ctx, e, name, tt.waiting, tt.cond)
		})
	}
	if tt.event != "" {
		waittest.EventuallyEvery(t, "Event "+tt.event, poll, 20*time.Second, func() (bool, string) {
			return observe(ctx, c, rec, nil, Expectation{Event: tt.event, Message: tt.see.Message}) != "", ""
		})
	}
	goal := Goal{Namespace: "default", Deployment: name}
	if tt.fault == "ready:fail:never-ready" {
		time.Sleep(2 * time.Second) // two of the readiness probe's periods
		if ok, detail, _ := goal.Check(ctx, c); ok {
			t.Fatalf("Ready despite the fault: %s", detail)
		}
	}
	e.Tracer.Faults.Remove(added.ID)
	if tt.applyErr != "" {
		if _, err := a.Apply(ctx, []byte(deploymentYAML(name, 1)), name); err != nil {
			t.Fatalf("apply after removing the fault: %v", err)
		}
	}
	recovery := tt.recovery
	if recovery == 0 {
		recovery = 30 * time.Second
	}
	waittest.EventuallyEvery(t, "recovery to Ready", poll, recovery, func() (bool, string) {
		ok, detail, err := goal.Check(ctx, c)
		return ok && err == nil, detail
	})
}

// observeName is observe for the events of one object family (a
// deployment's own, its ReplicaSet's and its pods', all named after it).
func observeName(rec *trace.Recording, name string, x Expectation) bool {
	for _, ev := range rec.Events() {
		if !strings.HasPrefix(ev.Pod, name) && !strings.Contains(ev.Message, name) {
			continue
		}
		if ev.Stage != x.Stage || (x.Status != "" && ev.Status != x.Status) || (x.Reason != "" && ev.Reason != x.Reason) ||
			!strings.Contains(ev.Message, x.Message) {
			continue
		}
		if x.MinDuration > 0 && (!ev.Status.Terminal() || ev.DurationMs < float64(x.MinDuration.Milliseconds())) {
			continue
		}
		return true
	}
	return false
}

// podShows reports whether a pod of the deployment has a container waiting
// with reason waiting, or the condition cond ("Type=Status/Reason").
func podShows(ctx context.Context, e *engine.Engine, name, waiting, cond string) (bool, string) {
	pods, err := e.AdminClient().CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		return false, err.Error()
	}
	var seen []string
	for _, p := range pods.Items {
		for _, s := range p.Status.ContainerStatuses {
			if w := s.State.Waiting; w != nil {
				seen = append(seen, "waiting "+w.Reason)
				if waiting != "" && w.Reason == waiting {
					return true, ""
				}
			}
		}
		for _, c := range p.Status.Conditions {
			got := fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason)
			seen = append(seen, got)
			if cond != "" && (got == cond || (strings.HasSuffix(cond, "/") && strings.HasPrefix(got, cond))) {
				return true, ""
			}
		}
		if p.Status.Phase == corev1.PodRunning {
			seen = append(seen, "Running")
		}
	}
	return false, strings.Join(seen, ", ")
}

// TestNodeNotReadyFault takes one node NotReady while its fault is active:
// Ready=False with the kubelet's reason and the not-ready taint; the other
// node is untouched, and removing the fault brings the node back.
func TestNodeNotReadyFault(t *testing.T) {
	if testproc.OwnProcess(t) {
		return
	}
	e := startEngine(t, 2, 20)
	ctx := context.Background()
	f, err := stages.ParseFault("kubelet:fail:node-not-ready@node/node-2")
	if err != nil {
		t.Fatal(err)
	}
	added := e.Tracer.Faults.Add(f)
	state := func(name string) (ready string, tainted bool) {
		n, err := e.AdminClient().CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err.Error(), false
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				ready = string(c.Status) + "/" + c.Reason
			}
		}
		for _, tn := range n.Spec.Taints {
			tainted = tainted || (tn.Key == corev1.TaintNodeNotReady && tn.Effect == corev1.TaintEffectNoSchedule)
		}
		return ready, tainted
	}
	waittest.EventuallyEvery(t, "node-2 NotReady and tainted", poll, 30*time.Second, func() (bool, string) {
		ready, tainted := state("node-2")
		return ready == "False/KubeletNotReady" && tainted, fmt.Sprintf("%s tainted=%v", ready, tainted)
	})
	if ready, tainted := state("node-1"); ready != "True/KubeletReady" || tainted {
		t.Fatalf("node-1 %s tainted=%v", ready, tainted)
	}
	e.Tracer.Faults.Remove(added.ID)
	waittest.EventuallyEvery(t, "node-2 Ready again", poll, 30*time.Second, func() (bool, string) {
		ready, tainted := state("node-2")
		return ready == "True/KubeletReady" && !tainted, fmt.Sprintf("%s tainted=%v", ready, tainted)
	})
}
