package apiserver

import (
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestExecContainer(t *testing.T) {
	pod := func(names ...string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
		for _, n := range names {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: n})
		}
		p.Spec.InitContainers = []corev1.Container{{Name: "init"}}
		return p
	}
	for _, tc := range []struct {
		name, container, want, err string
		pod                        *corev1.Pod
	}{
		{name: "only container", pod: pod("a"), want: "a"},
		{name: "named", pod: pod("a", "b"), container: "b", want: "b"},
		{name: "init container", pod: pod("a"), container: "init", want: "init"},
		{name: "unknown", pod: pod("a"), container: "x", err: "container x is not valid for pod p"},
		{name: "several, none named", pod: pod("a", "b"), err: "a container name must be specified for pod p, choose one of: [init a b]"},
		{name: "none", pod: pod(), err: "a container name must be specified for pod p"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := validContainer(tc.pod, tc.container)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestKubeletRequest(t *testing.T) {
	for _, tc := range []struct{ query, want string }{
		{"command=echo&command=hi&stdout=true&stderr=true", "command=echo&command=hi&error=1&output=1"},
		{"command=sh&stdin=true&stdout=true&tty=true&container=c", "command=sh&input=1&output=1&tty=1"},
		{"command=ls&stdout=false&stderr=1", "command=ls&error=1"},
	} {
		r := httptest.NewRequest("POST", "/api/v1/namespaces/d/pods/p/exec?"+tc.query, nil)
		if got := kubeletRequest(r).URL.RawQuery; got != tc.want {
			t.Errorf("%s: %s, want %s", tc.query, got, tc.want)
		}
	}
}
