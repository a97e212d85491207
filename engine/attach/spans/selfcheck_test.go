package spans

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/engine/enginetest"
	"github.com/podtrace/podtrace/export/otlp"
	"github.com/podtrace/podtrace/stages"
)

func TestMain(m *testing.M) { enginetest.Main(m) }

// TestSpansAgreeWithSeams runs the real kube-apiserver with its upstream
// tracing sent to the receiver, creates a pod that the real scheduler
// binds to a Node object, and checks the stages rebuilt from the spans
// alone against the seams' own: persist, authn and admission's end within
// a millisecond; the binding request inside the scheduler's bind stage.
// The test client's requests arrive as children of client spans (as a
// traced client's do), so the fold must not take a request's span for its
// trace's root.
func TestSpansAgreeWithSeams(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	var mu sync.Mutex
	var folded []stages.Event
	// The receiver stops after the control plane (cleanups run last
	// first): kube-apiserver flushes its spans as it shuts down, and to a
	// receiver already gone its exporter retries for half a minute.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r, err := Listen(ctx, "127.0.0.1:0", stages.EmitterFunc(func(e stages.Event) { mu.Lock(); folded = append(folded, e); mu.Unlock() }))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(otlp.EnvEndpoint, "http://"+r.Addr())
	t.Setenv(otlp.EnvProtocol, "grpc")
	env := enginetest.Start(t)
	client := env.Admin()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Status: corev1.NodeStatus{
		Capacity:    corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10"), corev1.ResourceCPU: resource.MustParse("2")},
		Allocatable: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10"), corev1.ResourceCPU: resource.MustParse("2")}}}
	if _, err := client.CoreV1().Nodes().Create(env.Ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Nodes().UpdateStatus(env.Ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "traced", Namespace: "default"}, Spec: corev1.PodSpec{
		Containers:  []corev1.Container{{Name: "c", Image: "busybox"}},
		Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}}}
	if _, err := client.CoreV1().Pods("default").Create(env.Ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var spans map[stages.ID]enginetest.Timed
	// Every span compared below: on a loaded machine the authn span may
	// come in a later batch than the rest of its trace (ci34).
	enginetest.WaitFor(t, 60*time.Second, "the pod's create and binding spans", func() bool {
		r.fold.Flush()
		mu.Lock()
		defer mu.Unlock()
		spans = enginetest.StageTimes(folded, "default", "traced")
		return !spans[stages.Persist].End.IsZero() && !spans[stages.Bind].End.IsZero() &&
			!spans[stages.Authn].Start.IsZero() && !spans[stages.Admission].End.IsZero()
	})
	seams := enginetest.StageTimes(env.Events(), "default", "traced")

	within := func(stage stages.ID, what string, a, b time.Time, d time.Duration) {
		t.Helper()
		if a.IsZero() || b.IsZero() || a.Sub(b).Abs() > d {
			t.Errorf("%s %s: spans %s, seams %s: want within %s", stage, what, a.Format(time.StampMicro), b.Format(time.StampMicro), d)
		}
	}
	within(stages.Persist, "start", spans[stages.Persist].Start, seams[stages.Persist].Start, time.Millisecond)
	within(stages.Persist, "end", spans[stages.Persist].End, seams[stages.Persist].End, time.Millisecond)
	within(stages.Authn, "start", spans[stages.Authn].Start, seams[stages.Authn].Start, time.Millisecond)
	within(stages.Admission, "end", spans[stages.Admission].End, seams[stages.Admission].End, time.Millisecond)
	if d := enginetest.Inside(spans[stages.Bind], seams[stages.Bind]); d != "" {
		t.Errorf("bind: the binding request: %s (the scheduler's bind)", d)
	}
	for _, s := range []stages.ID{stages.Persist, stages.Authn, stages.Authz, stages.Admission, stages.Schedule, stages.Bind} {
		t.Logf("%-9s spans %8.3fms seams %8.3fms (start %+.3fms)", s, spans[s].Duration(), seams[s].Duration(),
			float64(spans[s].Start.Sub(seams[s].Start).Microseconds())/1000)
	}
}
