package scheduler

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

// recorder collects stage events.
type recorder struct {
	mu     sync.Mutex
	events []stages.Event
}

func (r *recorder) Emit(e stages.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) find(pod string, stage stages.ID, status stages.Status) []stages.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []stages.Event
	for _, e := range r.events {
		if e.Pod == pod && e.Stage == stage && e.Status == status {
			out = append(out, e)
		}
	}
	return out
}

var podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// fakeClient is a fake clientset whose pods/binding sets spec.nodeName as
// the API server does (409 when already bound).
func fakeClient(objs ...runtime.Object) *fake.Clientset {
	c := fake.NewClientset(objs...)
	c.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "binding" {
			return false, nil, nil
		}
		b := a.(k8stesting.CreateAction).GetObject().(*v1.Binding)
		obj, err := c.Tracker().Get(podsGVR, a.GetNamespace(), b.Name)
		if err != nil {
			return true, nil, err
		}
		p := obj.(*v1.Pod).DeepCopy()
		if p.Spec.NodeName != "" {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods/binding"}, b.Name,
				fmt.Errorf("pod %v is already assigned to node %q", b.Name, p.Spec.NodeName))
		}
		p.Spec.NodeName = b.Target.Name
		p.Status.Conditions = append(p.Status.Conditions, v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionTrue})
		return true, b, c.Tracker().Update(podsGVR, p, a.GetNamespace())
	})
	return c
}

type env struct {
	client kubernetes.Interface
	clock  *clocktesting.FakeClock
	events *recorder
	tracer *trace.Tracer
	sched  *Scheduler
}

func start(t *testing.T, objs ...runtime.Object) *env {
	t.Helper()
	e := &env{client: fakeClient(objs...), clock: clocktesting.NewFakeClock(time.Now()), events: &recorder{}}
	e.tracer = trace.New(e.clock, e.events)
	s, err := New(Config{Client: e.client, Clock: e.clock, Tracer: e.tracer, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	e.sched = s
	return e
}

// eventually polls cond for up to 10 s, stepping the fake clock by 500 ms
// between polls so back-offs and flushes happen.
func (e *env) eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
		e.clock.Step(500 * time.Millisecond)
	}
}

func (e *env) pod(t *testing.T, name string) *v1.Pod {
	t.Helper()
	p, err := e.client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (e *env) apiEvents(t *testing.T, reason string) []v1.Event {
	t.Helper()
	l, err := e.client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []v1.Event
	for _, ev := range l.Items {
		if ev.Reason == reason {
			out = append(out, ev)
		}
	}
	return out
}

func TestSchedulesAndBindsSpreadingPods(t *testing.T) {
	e := start(t, makeNode("node-1", "2", "4Gi"), makeNode("node-2", "2", "4Gi"), makeNode("node-3", "2", "4Gi"))
	for i := range 3 {
		p := makePod(fmt.Sprintf("web-%d", i), "500m", "512Mi")
		if _, err := e.client.CoreV1().Pods("default").Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	nodes := map[string]bool{}
	e.eventually(t, "three pods bound", func() bool {
		for i := range 3 {
			if e.pod(t, fmt.Sprintf("web-%d", i)).Spec.NodeName == "" {
				return false
			}
		}
		return true
	})
	for i := range 3 {
		nodes[e.pod(t, fmt.Sprintf("web-%d", i)).Spec.NodeName] = true
	}
	if len(nodes) != 3 {
		t.Errorf("pods on %v, want spread over three nodes", nodes)
	}
	e.eventually(t, "Scheduled events", func() bool { return len(e.apiEvents(t, "Scheduled")) == 3 })
	for _, ev := range e.apiEvents(t, "Scheduled") {
		want := fmt.Sprintf("Successfully assigned default/%s to ", ev.InvolvedObject.Name)
		if !strings.HasPrefix(ev.Message, want) || ev.Source.Component != "default-scheduler" || ev.Type != v1.EventTypeNormal {
			t.Errorf("event %+v", ev)
		}
	}
	b := e.events.find("web-0", stages.Bind, stages.Succeeded)
	if len(b) != 1 || b[0].Reason != "Scheduled" || b[0].Component != "default-scheduler" || b[0].User != "system:kube-scheduler" {
		t.Fatalf("bind events %+v", b)
	}
	sc := e.events.find("web-0", stages.Schedule, stages.Succeeded)
	if len(sc) != 1 || sc[0].Scheduling == nil || sc[0].Scheduling.Chosen != b[0].Node || len(sc[0].Scheduling.Nodes) != 3 {
		t.Fatalf("schedule events %+v", sc)
	}
}

func TestUnschedulablePodThenNodeAdded(t *testing.T) {
	e := start(t, makeNode("node-1", "2", "4Gi"), makeNode("node-2", "2", "4Gi"), makeNode("node-3", "2", "4Gi"))
	if _, err := e.client.CoreV1().Pods("default").Create(context.Background(), makePod("big", "8", "1Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := "0/3 nodes are available: 3 Insufficient cpu. no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
	e.eventually(t, "PodScheduled=False", func() bool {
		for _, c := range e.pod(t, "big").Status.Conditions {
			if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse {
				if c.Reason != "Unschedulable" || c.Message != want {
					t.Fatalf("condition %+v", c)
				}
				return true
			}
		}
		return false
	})
	e.eventually(t, "FailedScheduling event", func() bool { return len(e.apiEvents(t, "FailedScheduling")) > 0 })
	if ev := e.apiEvents(t, "FailedScheduling")[0]; ev.Message != want || ev.Type != v1.EventTypeWarning || ev.Source.Component != "default-scheduler" {
		t.Errorf("event %+v", ev)
	}
	r := e.events.find("big", stages.Schedule, stages.Retrying)
	if len(r) == 0 || r[0].Reason != "FailedScheduling" || r[0].Message != want || r[0].NextTry == nil || r[0].Attempt != 1 {
		t.Fatalf("retrying events %+v", r)
	}
	if r[0].Scheduling == nil || len(r[0].Scheduling.Nodes) != 3 || r[0].Scheduling.Nodes[0].Plugin != "NodeResourcesFit" {
		t.Fatalf("verdicts %+v", r[0].Scheduling)
	}
	if last, ok := e.sched.LastAttempt("default", "big"); !ok || last.Chosen != "" || last.Nodes[2].Reason != "Insufficient cpu" {
		t.Fatalf("LastAttempt %+v %v", last, ok)
	}
	// A node big enough appears: the pod leaves the unschedulable queue and binds there.
	if _, err := e.client.CoreV1().Nodes().Create(context.Background(), makeNode("node-big", "16", "32Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually(t, "bound to node-big", func() bool { return e.pod(t, "big").Spec.NodeName == "node-big" })
	if ok := e.events.find("big", stages.Schedule, stages.Succeeded); len(ok) != 1 || ok[0].Attempt < 2 {
		t.Errorf("succeeded attempt %+v", ok)
	}
}

func TestBindFaultRetriesWithBackoff(t *testing.T) {
	e := start(t, makeNode("node-1", "2", "4Gi"))
	e.tracer.Faults.Add(stages.Fault{Stage: stages.Bind, Kind: stages.Flake, Count: 1, Scope: stages.Scope{Pod: "default/web"}})
	if _, err := e.client.CoreV1().Pods("default").Create(context.Background(), makePod("web", "100m", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually(t, "bound after the fault", func() bool { return e.pod(t, "web").Spec.NodeName == "node-1" })
	failed := e.events.find("web", stages.Bind, stages.Retrying)
	if len(failed) != 1 || !strings.HasPrefix(failed[0].Message, `Operation cannot be fulfilled on pods/binding "web"`) || failed[0].NextTry == nil {
		t.Fatalf("bind retry events %+v", failed)
	}
	if d := failed[0].NextTry.Sub(failed[0].Time); d != time.Second {
		t.Errorf("first back-off %v, want 1s", d)
	}
	if ok := e.events.find("web", stages.Bind, stages.Succeeded); len(ok) != 1 || ok[0].Attempt != 2 {
		t.Errorf("bind success %+v", ok)
	}
}

func TestScheduleFaultGivesRealisticMessage(t *testing.T) {
	e := start(t, makeNode("node-1", "2", "4Gi"), makeNode("node-2", "2", "4Gi"), makeNode("node-3", "2", "4Gi"))
	e.tracer.Faults.Add(stages.Fault{Stage: stages.Schedule, Kind: stages.Flake, Count: 1, Variant: "taint"})
	if _, err := e.client.CoreV1().Pods("default").Create(context.Background(), makePod("web", "100m", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually(t, "bound after the fault", func() bool { return e.pod(t, "web").Spec.NodeName != "" })
	r := e.events.find("web", stages.Schedule, stages.Retrying)
	want := "0/3 nodes are available: 3 node(s) had untolerated taint(s). no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
	if len(r) != 1 || r[0].Message != want {
		t.Fatalf("retrying %+v", r)
	}
}

func TestAssignedPodDeletedRequeuesPending(t *testing.T) {
	full := makePod("hog", "1500m", "", onNode("node-1"))
	e := start(t, makeNode("node-1", "2", "4Gi"), full)
	createPod(t, e.client, makePod("web", "1", ""))
	want := "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
	e.eventually(t, "FailedScheduling", func() bool {
		r := e.events.find("web", stages.Schedule, stages.Retrying)
		return len(r) > 0 && r[0].Message == want
	})
	if err := e.client.CoreV1().Pods("default").Delete(context.Background(), "hog", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually(t, "bound once the node has room", func() bool { return e.pod(t, "web").Spec.NodeName == "node-1" })
}

func TestPreemptionEvictsLowerPriorityPod(t *testing.T) {
	low := makePod("low", "1500m", "", onNode("node-1"), withPriority(1))
	e := start(t, makeNode("node-1", "2", "4Gi"), low)
	createPod(t, e.client, makePod("important", "1", "", withPriority(1000)))
	e.eventually(t, "victim deleted", func() bool {
		_, err := e.client.CoreV1().Pods("default").Get(context.Background(), "low", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	e.eventually(t, "Preempted event", func() bool { return len(e.apiEvents(t, "Preempted")) == 1 })
	if ev := e.apiEvents(t, "Preempted")[0]; ev.InvolvedObject.Name != "low" || !strings.HasPrefix(ev.Message, "Preempted by pod ") || !strings.HasSuffix(ev.Message, " on node node-1") {
		t.Errorf("Preempted event %+v", ev)
	}
	e.eventually(t, "preemptor bound", func() bool { return e.pod(t, "important").Spec.NodeName == "node-1" })
	// The failed attempt left the pod nominated and its condition says why.
	r := e.events.find("important", stages.Schedule, stages.Retrying)
	if len(r) == 0 || r[0].Message != "0/1 nodes are available: 1 Insufficient cpu." {
		t.Errorf("first attempt %+v", r)
	}
}

func TestSchedulingGatesHoldPodUntilRemoved(t *testing.T) {
	e := start(t, makeNode("node-1", "2", "4Gi"))
	gated := makePod("gated", "100m", "")
	gated.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/wait"}}
	createPod(t, e.client, gated)
	time.Sleep(200 * time.Millisecond)
	if p := e.pod(t, "gated"); p.Spec.NodeName != "" || len(e.events.find("gated", stages.Schedule, stages.Started)) != 0 {
		t.Fatalf("gated pod was scheduled: %q", p.Spec.NodeName)
	}
	p := e.pod(t, "gated")
	p.Spec.SchedulingGates = nil
	if _, err := e.client.CoreV1().Pods("default").Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually(t, "bound after the gate is removed", func() bool { return e.pod(t, "gated").Spec.NodeName == "node-1" })
	if err := e.client.CoreV1().Pods("default").Delete(context.Background(), "gated", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually(t, "verdicts forgotten", func() bool { _, ok := e.sched.LastAttempt("default", "gated"); return !ok })
}
