package apiserver

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLogContainer checks which container kubectl logs reads and the pod
// strategy's 400s when it cannot tell.
func TestLogContainer(t *testing.T) {
	pod := func(init []string, containers ...string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
		for _, n := range init {
			p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: n})
		}
		for _, n := range containers {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: n})
		}
		return p
	}
	tests := []struct {
		name      string
		pod       *corev1.Pod
		container string
		want      string
		err       string
	}{
		{"the only container", pod(nil, "app"), "", "app", ""},
		{"the only container despite init containers", pod([]string{"setup"}, "app"), "", "app", ""},
		{"named init container", pod([]string{"setup"}, "app"), "setup", "setup", ""},
		{"two containers", pod([]string{"setup"}, "app", "side"), "", "",
			"a container name must be specified for pod web, choose one of: [setup app side]"},
		{"unknown container", pod(nil, "app"), "nope", "", "container nope is not valid for pod web"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := validContainer(tc.pod, tc.container)
			if tc.err != "" {
				if !apierrors.IsBadRequest(err) || err.Error() != tc.err {
					t.Fatalf("error %v, want BadRequest %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("validContainer = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
