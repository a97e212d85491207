package containerd_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/internal/waittest"
	"github.com/podtrace/podtrace/stages"
)

// TestRealKubeletReactsOnContainerd breaks a pod's network setup through
// podtrace-cni and gives another an image reference the mirror does not
// have: the real kubelet and containerd say so in their own words
// (FailedCreatePodSandBox naming the plugin, ErrImagePull with the
// registry's not found), and once the fault is gone the first pod reaches
// Ready on the kubelet's own retry.
func TestRealKubeletReactsOnContainerd(t *testing.T) {
	c := startRealCluster(t, 1)
	ctx := context.Background()
	cni := c.Tracer.Faults.Add(stages.Fault{Stage: stages.CNI, Kind: stages.Fail})
	for _, p := range []struct{ name, image string }{{"no-address", "demo:1.0"}, {"typo", "demo:1.0-typo"}} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: "default", Labels: map[string]string{"app": p.name}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "demo", Image: p.image}}}}
		if _, err := c.AdminClient().CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	wantSandbox := `failed to setup network for sandbox`
	wantPlugin := `plugin type="podtrace-cni" failed (add): failed to allocate for range 0: no IP addresses available in range set: 10.244.1.1-10.244.1.254`
	c.waitEvent(t, "no-address", "FailedCreatePodSandBox", func(msg string) bool {
		return strings.Contains(msg, wantSandbox) && strings.Contains(msg, wantPlugin)
	})
	if evs := c.stageEvents("no-address", stages.CNI, stages.Retrying); len(evs) == 0 || !strings.Contains(evs[0].Message, wantPlugin) {
		t.Errorf("cni stage events %+v, want the plugin's failure", evs)
	}
	c.Tracer.Faults.Remove(cni.ID)
	c.waitPods(t, "app=no-address", 2*time.Minute, "Ready once the fault is gone", func(ps []corev1.Pod) bool {
		return len(ps) == 1 && ready(ps[0])
	})
	c.waitPods(t, "app=typo", 2*time.Minute, "ErrImagePull from the mirror", func(ps []corev1.Pod) bool {
		for _, p := range ps {
			for _, s := range p.Status.ContainerStatuses {
				if w := s.State.Waiting; w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff") &&
					strings.Contains(w.Message, `failed to resolve reference "docker.io/library/demo:1.0-typo": docker.io/library/demo:1.0-typo: not found`) {
					return true
				}
			}
		}
		return false
	})
}

// waitEvent waits for an Event of pod with reason whose message check accepts.
func (c *realCluster) waitEvent(t *testing.T, pod, reason string, check func(string) bool) {
	t.Helper()
	waittest.EventuallyEvery(t, "a "+reason+" event of "+pod+" as expected", 200*time.Millisecond, 2*time.Minute, func() (bool, string) {
		evs, err := c.AdminClient().CoreV1().Events("default").List(context.Background(), metav1.ListOptions{
			FieldSelector: "involvedObject.name=" + pod + ",reason=" + reason})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range evs.Items {
			if check(e.Message) {
				return true, ""
			}
			seen = append(seen, e.Message)
		}
		return false, fmt.Sprintf("saw %q", seen)
	})
}
