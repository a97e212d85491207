package outcome

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPod(t *testing.T) {
	meta := metav1.ObjectMeta{Namespace: "default", Name: "p"}
	tests := []struct {
		name   string
		status corev1.PodStatus
		want   State
		why    string
	}{
		{"pending", corev1.PodStatus{Phase: corev1.PodPending}, Pending, ""},
		{"ready", corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}, Done, "Ready"},
		{"succeeded", corev1.PodStatus{Phase: corev1.PodSucceeded}, Done, "Succeeded"},
		{"failed", corev1.PodStatus{Phase: corev1.PodFailed}, Failed, "Failed"},
		{"unschedulable", corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
			Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/3 nodes are available"}}}, Failed, "FailedScheduling: 0/3 nodes are available"},
		{"crashloop", corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "c",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}}, Failed, "CrashLoopBackOff"},
		{"pulling", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "c",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}}, Pending, ""},
	}
	for _, tt := range tests {
		got, why := Pod(&corev1.Pod{ObjectMeta: meta, Status: tt.status})
		if got != tt.want || !strings.Contains(why, tt.why) {
			t.Errorf("%s: %v %q, want %v %q", tt.name, got, why, tt.want, tt.why)
		}
	}
}

func TestTrackerCountsAPodReadyOnlyOnceItSettles(t *testing.T) {
	ready := func(restarts int32) Target {
		p := pod("p", corev1.PodRunning, true, restarts, "")
		return Target{Kind: "Pod", Namespace: "default", Name: "p", Live: live(t, &p)}
	}
	start := time.Unix(1000, 0)
	tr := NewTracker(5 * time.Second)
	steps := []struct {
		at       time.Duration
		pod      Target
		finished bool
	}{
		{0, ready(0), false},
		{4 * time.Second, ready(0), false},
		{5 * time.Second, ready(0), true},
		{6 * time.Second, ready(1), false}, // it restarted: settle again
		{10 * time.Second, ready(1), false},
		{11 * time.Second, ready(1), true},
	}
	for _, s := range steps {
		got := tr.Judge([]Target{s.pod}, nil, start.Add(s.at))
		if got.Finished() != s.finished || (s.finished && got.Done != 1) {
			t.Errorf("at %s: %+v, want finished=%v", s.at, got, s.finished)
		}
	}
	crash := pod("p", corev1.PodRunning, false, 3, "CrashLoopBackOff")
	got := tr.Judge([]Target{{Kind: "Pod", Namespace: "default", Name: "p", Live: live(t, &crash)}}, nil, start.Add(20*time.Second))
	if got.Failed != 1 || !strings.Contains(got.Reasons[0], "CrashLoopBackOff") {
		t.Errorf("crash loop: %+v", got)
	}
}
