package cluster

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/podtrace/podtrace/tui"
)

// Attached, the UI gets each Event's times and count as kubectl reads
// them, whichever recorder wrote it, and a pod's Events in kubectl's
// order: the scheduler's events.k8s.io/v1 Events (eventTime, series; no
// legacy timestamps, as the API serves them) by their series' last time,
// not by their first.
func TestAttachEventTimes(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "batch", Namespace: "shop", UID: "u1"}}
	ref := corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: "batch", UID: "u1"}
	ev := func(name string, edit func(*corev1.Event)) *corev1.Event {
		e := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"}, InvolvedObject: ref, Type: "Normal", Reason: name}
		edit(e)
		return e
	}
	series := ev("FailedScheduling", func(e *corev1.Event) {
		e.EventTime = metav1.NewMicroTime(t0)
		e.Series = &corev1.EventSeries{Count: 5, LastObservedTime: metav1.NewMicroTime(t0.Add(60 * time.Second))}
		e.ReportingController = "default-scheduler"
	})
	single := ev("Scheduled", func(e *corev1.Event) {
		e.EventTime = metav1.NewMicroTime(t0.Add(30 * time.Second))
		e.ReportingController = "default-scheduler"
	})
	legacy := ev("Pulling", func(e *corev1.Event) {
		e.FirstTimestamp, e.LastTimestamp, e.Count = metav1.NewTime(t0.Add(5*time.Second)), metav1.NewTime(t0.Add(10*time.Second)), 2
		e.Source = corev1.EventSource{Component: "kubelet", Host: "node-1"}
	})

	for _, tc := range []struct {
		ev          *corev1.Event
		last, first time.Time
		count       int
		source      string
	}{
		{series, t0.Add(60 * time.Second), t0, 5, "default-scheduler"},
		{single, t0.Add(30 * time.Second), t0.Add(30 * time.Second), 1, "default-scheduler"},
		{legacy, t0.Add(10 * time.Second), t0.Add(5 * time.Second), 2, "kubelet"},
	} {
		k := KubeEvent(tc.ev)
		if !k.LastSeen.Equal(tc.last) || !k.FirstSeen.Equal(tc.first) || k.Count != tc.count || k.Source != tc.source {
			t.Errorf("%s: last %v first %v count %d source %q; want %v %v %d %q", tc.ev.Reason,
				k.LastSeen, k.FirstSeen, k.Count, k.Source, tc.last, tc.first, tc.count, tc.source)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := New(ctx, Config{Client: fake.NewClientset(pod, series, single, legacy), Context: "prod", Namespace: "shop"})
	d, err := src.PodDetail("shop", "batch")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range d.Events {
		got = append(got, e.Reason)
	}
	if want := []string{"Pulling", "Scheduled", "FailedScheduling"}; len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("the pod's Events in order %v, want %v (by when they last happened)", got, want)
	}
}

// The header names the runtime the nodes report, as kubectl get nodes -o
// wide does, and counts only Ready nodes.
func TestHeaderNamesTheNodesRuntime(t *testing.T) {
	node := func(runtime string, ready corev1.ConditionStatus) *corev1.Node {
		return &corev1.Node{Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{ContainerRuntimeVersion: runtime},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}}}
	}
	for _, tt := range []struct {
		nodes   []*corev1.Node
		runtime string
		ready   int
	}{
		{[]*corev1.Node{node("containerd://1.6.20", corev1.ConditionTrue), node("containerd://1.6.20", corev1.ConditionFalse)}, "containerd", 1},
		{[]*corev1.Node{node("podtrace-sim://1.36.3", corev1.ConditionTrue)}, "simulated", 1},
		{[]*corev1.Node{node("", corev1.ConditionUnknown)}, "", 0},
	} {
		var st tui.Status
		for _, n := range tt.nodes {
			countNode(&st, n)
		}
		if st.Runtime != tt.runtime || st.NodesReady != tt.ready {
			t.Errorf("%s: runtime %q, %d Ready; want %q, %d", tt.nodes[0].Status.NodeInfo.ContainerRuntimeVersion, st.Runtime, st.NodesReady, tt.runtime, tt.ready)
		}
	}
}
