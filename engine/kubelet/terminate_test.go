package kubelet

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/stages"
)

// deletePod marks the pod deleted with a grace period, as the API server does.
func (e *testEnv) deletePod(t *testing.T, name string, grace int64) {
	t.Helper()
	p, err := e.client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.NewTime(e.clock.Now())
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &now, &grace
	if _, err := e.client.CoreV1().Pods("default").Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (e *testEnv) waitGone(t *testing.T, name string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := e.client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{}); err != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s not deleted", name)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func terminateDuration(t *testing.T, evs []stages.Event) time.Duration {
	t.Helper()
	for _, e := range evs {
		if e.Stage == stages.Terminate && e.Status == stages.Succeeded {
			return time.Duration(e.DurationMs * float64(time.Millisecond))
		}
	}
	t.Fatal("no terminate event")
	return 0
}

func TestTerminateGracePeriods(t *testing.T) {
	env := startKubelet(t, 50, nil)
	// A shell ignores SIGTERM: it is killed when the 20 s grace period ends.
	env.create(t, newPod("stubborn", v1.Container{Name: "sh", Image: "busybox:1.36", Command: []string{"sleep", "3600"}}))
	// nginx stops on SIGTERM after a 10 s preStop hook.
	web := newPod("polite", v1.Container{Name: "web", Image: "nginx:1.27",
		Lifecycle: &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "sleep 10"}}}}})
	env.create(t, web)
	env.waitFor(t, "stubborn", "Ready", isReady)
	env.waitFor(t, "polite", "Ready", isReady)

	env.deletePod(t, "stubborn", 20)
	env.deletePod(t, "polite", 30)
	env.waitGone(t, "stubborn")
	env.waitGone(t, "polite")
	if d := terminateDuration(t, env.events.forPod("stubborn")); d < 20*time.Second || d > 25*time.Second {
		t.Errorf("stubborn terminated in %v, want the 20s grace period", d)
	}
	if d := terminateDuration(t, env.events.forPod("polite")); d < 10*time.Second || d > 15*time.Second {
		t.Errorf("polite terminated in %v, want the 10s preStop hook", d)
	}
	if st, err := env.k.Runtime().ContainerStatus(context.Background(), "nope"); err == nil {
		t.Fatalf("unknown container has status %+v", st)
	}
}

func TestRejectedPod(t *testing.T) {
	env := startKubelet(t, 100, nil)
	pod := newPod("huge", v1.Container{Name: "c", Image: "nginx:1.27", Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("6")}}})
	env.create(t, pod)
	p := env.waitFor(t, "huge", "Failed", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	want := "Pod was rejected: Node didn't have enough resource: cpu, requested: 6000, used: 0, capacity: 4000"
	if p.Status.Reason != "OutOfcpu" || p.Status.Message != want {
		t.Fatalf("status reason %q message %q", p.Status.Reason, p.Status.Message)
	}
	got := stageLine(env.events.forPod("huge"), nil)
	if !strings.HasPrefix(got, "kubelet:started kubelet:failed") || strings.Contains(got, "sandbox") {
		t.Fatalf("stages %s", got)
	}
	env.kubeEvents(t, "OutOfcpu")
}
