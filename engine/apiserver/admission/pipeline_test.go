package admission

import (
	"context"
	"testing"

	"github.com/podtrace/podtrace/engine/apiserver/defaults"
	"github.com/podtrace/podtrace/engine/apiserver/validation"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestAdmittedPodPassesValidation runs a pod through the API server's order
// (defaults, admission chain, validation) and checks the chain's changes are
// themselves valid, and that a later update of the image stays valid.
func TestAdmittedPodPassesValidation(t *testing.T) {
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "limits"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
			Default: list("cpu", "500m", "memory", "128Mi"), DefaultRequest: list("cpu", "100m", "memory", "64Mi")}}}}
	defaults.Default(lr)
	s := newMemStore(map[string][]runtime.Object{
		"namespaces":      {namespace("default", corev1.NamespaceActive)},
		"serviceaccounts": {serviceAccount("default", "default")},
		"limitranges":     {lr},
		"resourcequotas":  {quota("compute", list("requests.cpu", "1", "limits.memory", "1Gi", "pods", "10"), nil)},
	})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox:1.36", Command: []string{"true"}}},
			Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.27",
				Ports:          []corev1.ContainerPort{{ContainerPort: 80}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{}}}}},
		},
	}
	defaults.Default(pod)
	if err := New(s).Admit(context.Background(), createPod(pod)); err != nil {
		t.Fatalf("admission: %v", err)
	}
	if errs := validation.ValidateCreate(pod); len(errs) != 0 {
		t.Fatalf("admitted pod is invalid: %v", errs.ToAggregate())
	}
	if got := qty(usedOf(t, s, "compute"), "requests.cpu"); got != "100m" {
		t.Errorf("charged requests.cpu = %s, want 100m (the LimitRange default)", got)
	}

	pod.ResourceVersion = "1"
	updated := pod.DeepCopy()
	updated.Spec.Containers[0].Image = "nginx:1.28"
	if errs := validation.ValidateUpdate(updated, pod); len(errs) != 0 {
		t.Errorf("image update of an admitted pod rejected: %v", errs.ToAggregate())
	}
}
