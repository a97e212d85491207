package admission

import (
	"context"
	"testing"

	"github.com/podtrace/podtrace/engine/apiserver/defaults"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func limitRange(items ...corev1.LimitRangeItem) *corev1.LimitRange {
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "limits"}, Spec: corev1.LimitRangeSpec{Limits: items}}
	defaults.Default(lr)
	return lr
}

func list(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func TestLimitRangerDefaults(t *testing.T) {
	lr := limitRange(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer,
		Default: list("cpu", "500m", "memory", "256Mi"), DefaultRequest: list("cpu", "100m")})
	l := NewLimitRanger(newMemStore(map[string][]runtime.Object{"limitranges": {lr}}))
	pod := newPod("default", "web", "")
	if err := l.Admit(context.Background(), createPod(pod)); err != nil {
		t.Fatal(err)
	}
	r := pod.Spec.Containers[0].Resources
	// LimitRange defaulting copies default memory into defaultRequest.
	if r.Requests.Cpu().String() != "100m" || r.Requests.Memory().String() != "256Mi" || r.Limits.Cpu().String() != "500m" || r.Limits.Memory().String() != "256Mi" {
		t.Errorf("resources = %+v", r)
	}
	want := "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app"
	if got := pod.Annotations["kubernetes.io/limit-ranger"]; got != want {
		t.Errorf("annotation = %q, want %q", got, want)
	}
}

func TestLimitRangerValidate(t *testing.T) {
	cases := []struct {
		name string
		item corev1.LimitRangeItem
		res  corev1.ResourceRequirements
		want string
	}{
		{"max exceeded by limit", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: list("cpu", "1")},
			corev1.ResourceRequirements{Limits: list("cpu", "2"), Requests: list("cpu", "2")},
			`pods "web" is forbidden: maximum cpu usage per Container is 1, but limit is 2`},
		{"min above request", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: list("memory", "64Mi")},
			corev1.ResourceRequirements{Requests: list("memory", "32Mi")},
			`pods "web" is forbidden: minimum memory usage per Container is 64Mi, but request is 32Mi`},
		{"pod max", corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: list("cpu", "1")},
			corev1.ResourceRequirements{Requests: list("cpu", "500m")},
			`pods "web" is forbidden: maximum cpu usage per Pod is 1.  No limit is specified`},
		{"ratio", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, MaxLimitRequestRatio: list("cpu", "2")},
			corev1.ResourceRequirements{Requests: list("cpu", "100m"), Limits: list("cpu", "1")},
			`pods "web" is forbidden: cpu max limit to request ratio per Container is 2, but provided ratio is 10.000000`},
		{"within limits", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: list("cpu", "1")},
			corev1.ResourceRequirements{Requests: list("cpu", "1"), Limits: list("cpu", "1")}, ""},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			// Validate only, without the mutating defaults, to see each rule alone.
			item := tt.item
			lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "l"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{item}}}
			l := NewLimitRanger(newMemStore(map[string][]runtime.Object{"limitranges": {lr}}))
			pod := newPod("default", "web", "")
			pod.Spec.Containers[0].Resources = tt.res
			err := l.Validate(context.Background(), createPod(pod))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err == nil || err.Error() != tt.want {
				t.Fatalf("err = %v\nwant %s", err, tt.want)
			}
		})
	}
}
