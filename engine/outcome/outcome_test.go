package outcome

import (
	"strings"
	"testing"

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
