package endpointslice

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func testPod(name, ip string, ready, terminating bool, phase corev1.PodPhase) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}}}},
		Status: corev1.PodStatus{Phase: phase, PodIP: ip}}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	if terminating {
		now := metav1.Now()
		p.DeletionTimestamp = &now
	}
	return p
}

func TestDesired(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"team": "a"}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{
			{Name: "http", Port: 80, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP}}}}
	pods := []*corev1.Pod{
		testPod("b", "10.0.0.2", false, false, corev1.PodRunning),
		testPod("a", "10.0.0.1", true, false, corev1.PodRunning),
		testPod("c", "10.0.0.3", true, true, corev1.PodRunning),
		testPod("d", "", false, false, corev1.PodPending),           // no IP yet
		testPod("e", "10.0.0.5", false, false, corev1.PodSucceeded), // terminal
	}
	want := desired(svc, pods)
	if len(want) != 1 {
		t.Fatalf("%d slices, want 1", len(want))
	}
	ports, eps := want[0][0].([]discoveryv1.EndpointPort), want[0][1].([]discoveryv1.Endpoint)
	if len(ports) != 1 || *ports[0].Port != 8080 || *ports[0].Name != "http" {
		t.Errorf("ports %+v: the named targetPort resolves to 8080", ports)
	}
	var got []string
	for _, ep := range eps {
		got = append(got, fmt.Sprintf("%s %s ready=%v serving=%v terminating=%v node=%s",
			ep.TargetRef.Name, ep.Addresses[0], *ep.Conditions.Ready, *ep.Conditions.Serving, *ep.Conditions.Terminating, *ep.NodeName))
	}
	wantEps := []string{
		"a 10.0.0.1 ready=true serving=true terminating=false node=node-1",
		"b 10.0.0.2 ready=false serving=false terminating=false node=node-1",
		"c 10.0.0.3 ready=false serving=true terminating=true node=node-1",
	}
	if fmt.Sprint(got) != fmt.Sprint(wantEps) {
		t.Errorf("endpoints:\n%v\nwant\n%v", got, wantEps)
	}
	l := sliceLabels(svc)
	if l[discoveryv1.LabelServiceName] != "web" || l[discoveryv1.LabelManagedBy] != ControllerName || l["team"] != "a" {
		t.Errorf("labels %v", l)
	}
	s := newSlice(svc, l, ports, eps)
	if s.GenerateName != "web-" || len(s.OwnerReferences) != 1 || s.OwnerReferences[0].Kind != "Service" || !*s.OwnerReferences[0].Controller {
		t.Errorf("slice meta %+v", s.ObjectMeta)
	}
	// No pods: one placeholder slice without endpoints.
	if empty := desired(svc, nil); len(empty) != 1 || len(empty[0][1].([]discoveryv1.Endpoint)) != 0 {
		t.Errorf("placeholder: %v", empty)
	}
	// More pods than fit in a slice: several slices.
	var many []*corev1.Pod
	for i := 0; i < 250; i++ {
		many = append(many, testPod(fmt.Sprintf("p%03d", i), fmt.Sprintf("10.1.%d.%d", i/200, i%200), true, false, corev1.PodRunning))
	}
	if n := len(desired(svc, many)); n != 3 {
		t.Errorf("250 endpoints in %d slices, want 3", n)
	}
}

func TestTracker(t *testing.T) {
	tr := newTracker()
	slice := func(name, rv string) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv}}
	}
	tr.wrote("ns/web", slice("web-a", "10"), false)
	if !tr.stale("ns/web", nil) || !tr.stale("ns/web", []*discoveryv1.EndpointSlice{slice("web-a", "9")}) {
		t.Error("a cache without the created slice, or with an older version, is not stale")
	}
	if tr.stale("ns/web", []*discoveryv1.EndpointSlice{slice("web-a", "10")}) {
		t.Error("a cache with the write is stale")
	}
	tr.wrote("ns/web", slice("web-a", "10"), true)
	if !tr.stale("ns/web", []*discoveryv1.EndpointSlice{slice("web-a", "10")}) || tr.stale("ns/web", nil) {
		t.Error("deletion not tracked")
	}
	tr.wrote("ns/web", slice("web-b", "12"), false)
	tr.gone("ns/web", "web-b") // deleted by someone else before the cache saw it
	if tr.stale("ns/web", nil) {
		t.Error("a slice the informer saw deleted keeps the cache stale")
	}
}
