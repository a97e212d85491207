package spans

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/enginetest"
	"github.com/podtrace/podtrace/engine/logs"
	"github.com/podtrace/podtrace/engine/nodes"
	"github.com/podtrace/podtrace/export/otlp"
	"github.com/podtrace/podtrace/stages"
)

// agreement is how close a stage rebuilt from the components' spans must
// come to the seams' own, at its start and at its end (issue #32).
const agreement = 10 * time.Millisecond

// TestKubeletSpansAgreeWithSeams runs the embedded cluster (real kubelets
// on the simulated runtime, which records its CRI calls as containerd 2.x
// does) with every component's upstream tracing sent to the receiver,
// starts a 3-replica Deployment, and checks each pod's stages rebuilt from
// the spans alone against the seams' own: sandbox, pull, create, start and
// bind within 10 ms at both ends.
func TestKubeletSpansAgreeWithSeams(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	logs.To(io.Discard)
	var mu sync.Mutex
	var folded []stages.Event
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := Listen(ctx, "127.0.0.1:0", stages.EmitterFunc(func(e stages.Event) { mu.Lock(); folded = append(folded, e); mu.Unlock() }))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(otlp.EnvEndpoint, "http://"+r.Addr())
	t.Setenv(otlp.EnvProtocol, "grpc")
	e, err := engine.Start(ctx, engine.Config{DataDir: t.TempDir(), UnsafeNoFsync: true, Nodes: nodes.Defaults(2), Speed: 5, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	live := e.Hub.Record()
	defer live.Stop()
	replicas := int32(3)
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.27"}}}}}}
	if _, err := e.AdminClient().AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pods []string
	enginetest.WaitFor(t, 3*time.Minute, "3 pods started, their spans folded", func() bool {
		r.fold.Flush()
		pods = startedPods(live.Events())
		mu.Lock()
		defer mu.Unlock()
		for _, p := range pods {
			if s := enginetest.StageTimes(folded, "default", p); s[stages.Start].End.IsZero() || s[stages.Bind].End.IsZero() {
				return false
			}
		}
		return len(pods) == 3
	})
	mu.Lock()
	defer mu.Unlock()
	pulls := 0
	for _, p := range pods {
		spans, seams := enginetest.StageTimes(folded, "default", p), enginetest.StageTimes(live.Events(), "default", p)
		want := []stages.ID{stages.Bind, stages.Sandbox, stages.Create, stages.Start}
		if !spans[stages.Pull].Start.IsZero() { // no PullImage for an image already on the node
			want = append(want, stages.Pull)
			pulls++
		}
		for _, s := range want {
			if d := enginetest.Disagreement(spans[s], seams[s], agreement); d != "" {
				t.Errorf("pod %s %s %s", p, s, d)
			}
		}
		for _, s := range []stages.ID{stages.Bind, stages.Kubelet, stages.Sandbox, stages.Pull, stages.Create, stages.Start} {
			t.Logf("%s %-8s %s", p, s, enginetest.Compared(spans[s], seams[s]))
		}
	}
	if pulls == 0 {
		t.Error("no pod's image pull came from the spans")
	}
}

// startedPods names the pods whose start stage the seams saw succeed.
func startedPods(evs []stages.Event) []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range evs {
		if e.Kind == stages.KindPod && e.Stage == stages.Start && e.Status == stages.Succeeded && !seen[e.Pod] {
			seen[e.Pod] = true
			out = append(out, e.Pod)
		}
	}
	return out
}
