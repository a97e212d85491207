package endpoint

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func pod(name, ip string, ready bool) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:   corev1.PodSpec{NodeName: "node-1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}}}
}

func TestSubsets(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, ClusterIP: "10.96.0.5",
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}}}
	terminating := pod("t", "10.0.0.9", true)
	now := metav1.Now()
	terminating.DeletionTimestamp = &now
	ss := Subsets(svc, []*corev1.Pod{pod("b", "10.0.0.2", true), pod("a", "10.0.0.1", true), pod("n", "10.0.0.3", false), terminating})
	if len(ss) != 1 {
		t.Fatalf("%d subsets, want 1: %+v", len(ss), ss)
	}
	s := ss[0]
	if len(s.Addresses) != 2 || s.Addresses[0].IP != "10.0.0.1" || s.Addresses[1].IP != "10.0.0.2" ||
		len(s.NotReadyAddresses) != 1 || s.NotReadyAddresses[0].IP != "10.0.0.3" ||
		len(s.Ports) != 1 || s.Ports[0].Port != 8080 || s.Addresses[0].TargetRef.Name != "a" || *s.Addresses[0].NodeName != "node-1" {
		t.Errorf("subset %+v", s)
	}
	if l := endpointsLabels(svc); l[LabelManagedBy] != ControllerName || len(l) != 1 {
		t.Errorf("labels %v", l)
	}
}
