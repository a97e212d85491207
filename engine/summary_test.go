package engine_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/enginetest"
	"github.com/podtrace/podtrace/engine/node"
)

// kubeletSummary is TestKubeletPods' check of node-1's summary API.
func kubeletSummary(t *testing.T, e *engine.Engine, create func(*testing.T, *corev1.Pod), get func(string) *corev1.Pod,
	event func(name, reason, contains string) func() bool) {
	ctx := context.Background()
	// As the kubelet's summary API reports it (kubectl get --raw
	// /api/v1/nodes/node-1/proxy/stats/summary; its eviction manager
	// reads it too): the node's ephemeral-storage capacity, with the
	// image pulled for a pod of its own using some of it, its memory, and
	// its pods. And no InvalidDiskCapacity Warning, which the image
	// garbage collector sends at start for a disk of no capacity.
	create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "summarized"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}})
	enginetest.WaitFor(t, 30*time.Second, "the pod Ready", func() bool { return isReady(get("summarized")) })
	raw, err := e.AdminClient().CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/node-1/proxy/stats/summary").DoRaw(ctx)
	if err != nil {
		t.Fatalf("stats/summary: %v", err)
	}
	var summary statsapi.Summary
	if err := json.Unmarshal(raw, &summary); err != nil {
		t.Fatal(err)
	}
	want := uint64(node.DefaultEphemeralStorage.Value())
	if fs := summary.Node.Fs; fs == nil || fs.CapacityBytes == nil || *fs.CapacityBytes != want {
		t.Errorf("node fs %+v, want a capacity of %d bytes", fs, want)
	}
	n, err := e.AdminClient().CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m := summary.Node.Memory; m == nil || m.AvailableBytes == nil || int64(*m.AvailableBytes) != n.Status.Capacity.Memory().Value() {
		t.Errorf("node memory %+v, want all of its %s available", m, n.Status.Capacity.Memory())
	}
	if rt := summary.Node.Runtime; rt == nil || rt.ImageFs == nil || rt.ImageFs.CapacityBytes == nil ||
		*rt.ImageFs.CapacityBytes != want || rt.ImageFs.UsedBytes == nil || *rt.ImageFs.UsedBytes == 0 {
		t.Errorf("image fs %+v, want a capacity of %d bytes, some of it used", rt, want)
	}
	listed := false
	for _, p := range summary.Pods {
		listed = listed || p.PodRef.Name == "summarized" && len(p.Containers) == 1 && p.Containers[0].Name == "app"
	}
	if !listed {
		t.Errorf("the summary's pods %+v, want summarized's container app among them", summary.Pods)
	}
	if event("node-1", "InvalidDiskCapacity", "")() {
		t.Error("a Warning InvalidDiskCapacity for node-1")
	}
	// With the summary answering, the eviction manager and the image
	// garbage collector act on it: neither may find pressure.
	for _, c := range n.Status.Conditions {
		if (c.Type == corev1.NodeMemoryPressure || c.Type == corev1.NodeDiskPressure) && c.Status != corev1.ConditionFalse {
			t.Errorf("node condition %s is %s: %s", c.Type, c.Status, c.Message)
		}
	}
	for _, reason := range []string{"EvictionThresholdMet", "FreeDiskSpaceFailed", "ImageGCFailed"} {
		if event("node-1", reason, "")() {
			t.Errorf("a %s event for node-1", reason)
		}
	}
}
