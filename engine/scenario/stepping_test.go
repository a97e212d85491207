package scenario

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubectl/pkg/util/podutils"

	"github.com/podtrace/podtrace/engine/apply"
	"github.com/podtrace/podtrace/internal/testproc"
	"github.com/podtrace/podtrace/internal/waittest"
	"github.com/podtrace/podtrace/stages"
)

// TestBreakpointHoldsOnePodWhileOthersGetReady stops every pod of a
// Deployment before the kubelet stage, lets two go on and keeps the third:
// the two reach Ready while the third stays held, Pending on its node, with
// a waiting Breakpoint event. Stepping runs its kubelet stage and holds it
// before the sandbox; continuing brings it to Ready.
func TestBreakpointHoldsOnePodWhileOthersGetReady(t *testing.T) {
	if testproc.OwnProcess(t) {
		return
	}
	e := startEngine(t, 3, 20)
	ctx := context.Background()
	rec := e.Hub.Record()
	defer rec.Stop()
	bp := stages.Breakpoint{Stage: stages.Kubelet}
	e.Tracer.Breaks.Set(bp)
	a, err := apply.New(e.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Apply(ctx, []byte(deploymentYAML("web", 3)), "web"); err != nil {
		t.Fatal(err)
	}
	waittest.EventuallyEvery(t, "three pods held before the kubelet stage", poll, 20*time.Second, func() (bool, string) {
		return len(e.Tracer.Breaks.Held()) == 3, ""
	})
	e.Tracer.Breaks.Remove(bp)
	held := e.Tracer.Breaks.Held()
	kept := held[2].Pod
	for _, h := range held[:2] {
		if !e.Tracer.Breaks.Continue(h.Pod) {
			t.Fatalf("continue %s", h.Pod)
		}
	}
	c := e.AdminClient()
	waittest.EventuallyEvery(t, "the two released pods Ready", poll, 20*time.Second, func() (bool, string) {
		pods, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err.Error()
		}
		ready := 0
		for i := range pods.Items {
			if podutils.IsPodReady(&pods.Items[i]) {
				ready++
			}
		}
		return ready == 2, ""
	})
	time.Sleep(200 * time.Millisecond) // 4 s of engine time more: the kept pod must not move
	if h := e.Tracer.Breaks.Held(); len(h) != 1 || h[0].Pod != kept || h[0].Stage != stages.Kubelet {
		t.Fatalf("held %+v, want only %s before kubelet", h, kept)
	}
	name := strings.TrimPrefix(kept, "default/")
	p, err := c.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodPending || podutils.IsPodReady(p) {
		t.Fatalf("held pod as stored: node %q phase %s", p.Spec.NodeName, p.Status.Phase)
	}
	if !observeName(rec, name, Expectation{Stage: stages.Kubelet, Status: stages.Waiting, Reason: "Breakpoint", Message: "held before kubelet"}) {
		t.Fatal("no waiting Breakpoint event for the held pod")
	}

	// n: run the kubelet stage, hold before the next one.
	if !e.Tracer.Breaks.Step(kept) {
		t.Fatal("step")
	}
	waittest.EventuallyEvery(t, "held again before sandbox", poll, 30*time.Second, func() (bool, string) {
		h := e.Tracer.Breaks.Held()
		return len(h) == 1 && h[0].Stage == stages.Sandbox, ""
	})
	if !observeName(rec, name, Expectation{Stage: stages.Kubelet, Status: stages.Succeeded}) {
		t.Fatal("the stepped kubelet stage did not succeed")
	}
	// c: run on to Ready.
	e.Tracer.Breaks.ContinueAll()
	waittest.EventuallyEvery(t, "all three Ready", poll, 20*time.Second, func() (bool, string) {
		ok, detail, err := Goal{Namespace: "default", Deployment: "web"}.Check(ctx, c)
		return ok && err == nil, detail
	})
}
