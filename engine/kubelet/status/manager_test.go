package status

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestManagerWritesLatestOnceAndKeepsPodScheduled(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "u1"},
		Status: v1.PodStatus{Phase: v1.PodPending, Conditions: []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionTrue}}}}
	client := fake.NewClientset(pod)
	m := NewManager(client)
	// Queue three statuses before any worker runs: only the last is written.
	for _, phase := range []v1.PodPhase{v1.PodPending, v1.PodPending, v1.PodRunning} {
		m.SetPodStatus(pod, v1.PodStatus{Phase: phase, PodIP: "10.244.1.2",
			StartTime:  &metav1.Time{Time: time.Date(2026, 1, 1, 0, 0, 0, 123456789, time.UTC)},
			Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m.Start(ctx, 1)
	var got *v1.Pod
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		got, _ = client.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
		if got.Status.Phase == v1.PodRunning {
			break
		}
	}
	if got.Status.Phase != v1.PodRunning || got.Status.PodIP != "10.244.1.2" {
		t.Fatalf("status %+v", got.Status)
	}
	if got.Status.StartTime.Nanosecond() != 0 {
		t.Errorf("start time not normalized to seconds: %v", got.Status.StartTime)
	}
	types := map[v1.PodConditionType]bool{}
	for _, c := range got.Status.Conditions {
		types[c.Type] = true
	}
	if !types[v1.PodScheduled] || !types[v1.PodReady] {
		t.Errorf("conditions %+v, want PodScheduled kept and Ready added", got.Status.Conditions)
	}
	if w := m.Writes(); w != 1 {
		t.Errorf("%d writes, want 1", w)
	}
	// The same status again is not rewritten.
	st, _ := m.Status("u1")
	m.SetPodStatus(got, st)
	time.Sleep(50 * time.Millisecond)
	if w := m.Writes(); w != 1 {
		t.Errorf("%d writes after an unchanged status, want 1", w)
	}
}

func TestNewer(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want bool
	}{{"10", "9", true}, {"9", "10", false}, {"5", "5", false}, {"x", "5", true}} {
		if got := newer(tt.a, tt.b); got != tt.want {
			t.Errorf("newer(%s, %s) = %v", tt.a, tt.b, got)
		}
	}
}
