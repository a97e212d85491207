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
	if s := Judge(nil, 2); s.Finished() || s.Pending != 2 {
		t.Errorf("missing pods must count as pending: %+v", s)
	}
}

func TestTrackerCountsAPodReadyOnlyOnceItSettles(t *testing.T) {
	ready := func(restarts int32) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p", UID: "u"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "c", RestartCount: restarts}}}}
	}
	start := time.Unix(1000, 0)
	tr := NewTracker(5 * time.Second)
	steps := []struct {
		at       time.Duration
		pod      corev1.Pod
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
		got := tr.Judge([]corev1.Pod{s.pod}, 1, start.Add(s.at))
		if got.Finished() != s.finished || (s.finished && got.Done != 1) {
			t.Errorf("at %s: %+v, want finished=%v", s.at, got, s.finished)
		}
	}
	crash := ready(3)
	crash.Status.Conditions = nil
	crash.Status.ContainerStatuses[0].State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s restarting failed container"}
	if got := tr.Judge([]corev1.Pod{crash}, 1, start.Add(20*time.Second)); got.Failed != 1 || !strings.Contains(got.Reasons[0], "CrashLoopBackOff") {
		t.Errorf("crash loop: %+v", got)
	}
}
