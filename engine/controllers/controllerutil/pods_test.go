package controllerutil

import (
	"sort"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

type podOpt func(*v1.Pod)

func mkPod(name string, opts ...podOpt) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: metav1.NewTime(t0)}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func onNode(n string) podOpt      { return func(p *v1.Pod) { p.Spec.NodeName = n } }
func phase(ph v1.PodPhase) podOpt { return func(p *v1.Pod) { p.Status.Phase = ph } }
func created(d time.Duration) podOpt {
	return func(p *v1.Pod) { p.CreationTimestamp = metav1.NewTime(t0.Add(d)) }
}
func restarts(n int32) podOpt {
	return func(p *v1.Pod) { p.Status.ContainerStatuses = []v1.ContainerStatus{{RestartCount: n}} }
}
func cost(v string) podOpt {
	return func(p *v1.Pod) { p.Annotations = map[string]string{"controller.kubernetes.io/pod-deletion-cost": v} }
}
func readySince(d time.Duration) podOpt {
	return func(p *v1.Pod) {
		p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(d))}}
	}
}

func TestRankedPodsDeletesFirst(t *testing.T) {
	now := metav1.NewTime(t0.Add(time.Hour))
	tests := []struct {
		name         string
		first, then  *v1.Pod
		rankF, rankT int
	}{
		{"unscheduled before scheduled", mkPod("a"), mkPod("b", onNode("n1"), phase(v1.PodRunning)), 0, 0},
		{"pending before running", mkPod("a", onNode("n1"), phase(v1.PodPending)), mkPod("b", onNode("n1"), phase(v1.PodRunning)), 0, 0},
		{"unknown before running", mkPod("a", onNode("n1"), phase(v1.PodUnknown)), mkPod("b", onNode("n1"), phase(v1.PodRunning)), 0, 0},
		{"not ready before ready", mkPod("a", onNode("n1"), phase(v1.PodRunning)), mkPod("b", onNode("n1"), phase(v1.PodRunning), readySince(0)), 0, 0},
		{"lower deletion cost first", mkPod("a", onNode("n1"), cost("-5")), mkPod("b", onNode("n1"), cost("10")), 0, 0},
		{"doubled up first", mkPod("a", onNode("n1")), mkPod("b", onNode("n2")), 3, 1},
		{"ready more recently first", mkPod("a", onNode("n1"), readySince(50*time.Minute)), mkPod("b", onNode("n1"), readySince(0)), 0, 0},
		{"more restarts first", mkPod("a", onNode("n1"), restarts(4)), mkPod("b", onNode("n1"), restarts(1)), 0, 0},
		{"newer first", mkPod("a", onNode("n1"), created(50*time.Minute)), mkPod("b", onNode("n1")), 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Start in the wrong order; sorting must put "first" first.
			r := RankedPods{Pods: []*v1.Pod{tt.then, tt.first}, Rank: []int{tt.rankT, tt.rankF}, Now: now}
			sort.Sort(r)
			if r.Pods[0] != tt.first {
				t.Fatalf("deleted %s first, want %s", r.Pods[0].Name, tt.first.Name)
			}
		})
	}
}

func TestIsPodAvailable(t *testing.T) {
	p := mkPod("a", readySince(0))
	if !IsPodAvailable(p, 0, t0) {
		t.Fatal("ready pod with minReadySeconds 0 not available")
	}
	if IsPodAvailable(p, 10, t0.Add(5*time.Second)) {
		t.Fatal("available before minReadySeconds passed")
	}
	if !IsPodAvailable(p, 10, t0.Add(11*time.Second)) {
		t.Fatal("not available after minReadySeconds")
	}
	if IsPodAvailable(mkPod("b"), 0, t0) {
		t.Fatal("unready pod available")
	}
}

func TestPodFromTemplate(t *testing.T) {
	tmpl := &v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"a": "b"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "nginx"}}}}
	ref := &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-abc", UID: "u1", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	pod, err := PodFromTemplate(tmpl, "web-abc", ref)
	if err != nil {
		t.Fatal(err)
	}
	if pod.GenerateName != "web-abc-" || pod.Labels["app"] != "web" || pod.Annotations["a"] != "b" || pod.Spec.Containers[0].Image != "nginx" {
		t.Fatalf("pod = %+v", pod.ObjectMeta)
	}
	if len(pod.OwnerReferences) != 1 || pod.OwnerReferences[0].UID != "u1" {
		t.Fatalf("ownerReferences = %+v", pod.OwnerReferences)
	}
	tmpl.Labels["app"] = "changed"
	if pod.Labels["app"] != "web" {
		t.Fatal("pod labels share the template's map")
	}
	if _, err := PodFromTemplate(&v1.PodTemplateSpec{}, "x", ref); err == nil || err.Error() != "unable to create pods, no labels" {
		t.Fatalf("no labels: err = %v", err)
	}
	if _, err := PodFromTemplate(tmpl, "x", &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet"}); err == nil {
		t.Fatal("a non-controller reference was accepted")
	}
}

func TestPodsPrefix(t *testing.T) {
	long := ""
	for len(long) < 254 {
		long += "a"
	}
	if got := PodsPrefix("web"); got != "web-" {
		t.Fatalf("PodsPrefix(web) = %q", got)
	}
	if got := PodsPrefix(long); got != long {
		t.Fatalf("a 254-char name gets a dash: %q", got[len(got)-3:])
	}
}
