package containerd_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podtrace/podtrace/stages"
)

// TestFaultsActOnRealParts breaks the pull and the postStart hook of a real
// pod: the errors are containerd's own (a real 404 from the loopback
// registry, a real exec exiting 1); removing the faults lets it reach Ready,
// with an HTTP readiness probe sent from inside the pod's network namespace.
func TestFaultsActOnRealParts(t *testing.T) {
	c := startCluster(t, 1)
	ctx := context.Background()
	pull := c.Tracer.Faults.Add(stages.Fault{Stage: stages.Pull, Kind: stages.Fail, Variant: "not-found"})
	c.Tracer.Faults.Add(stages.Fault{Stage: stages.Hooks, Kind: stages.Flake, Count: 1})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "real-faults", Namespace: "default", Labels: map[string]string{"app": "real-faults"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "demo", Image: "podtrace.dev/demo:1.0",
			Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
			ReadinessProbe: &corev1.Probe{PeriodSeconds: 1, ProbeHandler: corev1.ProbeHandler{
				HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}}}}}}
	if _, err := c.AdminClient().CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitPods(t, "app=real-faults", 2*time.Minute, "ErrImagePull from a real pull", func(ps []corev1.Pod) bool {
		for _, p := range ps {
			for _, s := range p.Status.ContainerStatuses {
				if w := s.State.Waiting; w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff") &&
					strings.Contains(w.Message, "not found") {
					return true
				}
			}
		}
		return false
	})
	c.Tracer.Faults.Remove(pull.ID)
	c.Clock.FastForwardWait() // skip the image back-off
	c.waitPods(t, "app=real-faults", 3*time.Minute, "Ready after the faults", func(ps []corev1.Pod) bool {
		return len(ps) == 1 && ready(ps[0])
	})
	var hookFailed bool
	for _, e := range c.stageEvents("real-faults", stages.Hooks, stages.Failed) {
		hookFailed = hookFailed || strings.Contains(e.Message, "exited with 1")
	}
	for _, e := range c.stageEvents("real-faults", stages.Hooks, stages.Retrying) {
		hookFailed = hookFailed || strings.Contains(e.Message, "exited with 1")
	}
	evs, _ := c.AdminClient().CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=real-faults,reason=FailedPostStartHook"})
	if !hookFailed && len(evs.Items) == 0 {
		t.Fatalf("the hook fault left no trace of a real exec exiting 1")
	}
}
