package cache

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func node(name string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1.NodeStatus{Allocatable: v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("4"), v1.ResourcePods: resource.MustParse("110")}}}
}

func pod(name, nodeName, cpu string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name)},
		Spec: v1.PodSpec{NodeName: nodeName, Containers: []v1.Container{{Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}}}}
}

func TestSnapshotIsIncrementalAndIsolated(t *testing.T) {
	c := New()
	c.AddNode(node("b"))
	c.AddNode(node("a"))
	s := NewSnapshot()
	c.UpdateSnapshot(s)
	if l := s.List(); len(l) != 2 || l[0].Node().Name != "a" || l[1].Node().Name != "b" {
		t.Fatalf("list %v", l)
	}
	a, _ := s.Get("a")
	b, _ := s.Get("b")
	if err := c.AssumePod(pod("p", "a", "1")); err != nil {
		t.Fatal(err)
	}
	if a.Requested.MilliCPU != 0 {
		t.Fatal("snapshot changed before UpdateSnapshot")
	}
	genB := b.Generation
	c.UpdateSnapshot(s)
	if a.Requested.MilliCPU != 1000 {
		t.Fatalf("assumed pod not in snapshot: %d", a.Requested.MilliCPU)
	}
	if b.Generation != genB {
		t.Fatal("unchanged node b was copied again")
	}
	if err := c.AssumePod(pod("p", "a", "1")); err == nil {
		t.Fatal("assuming twice should fail")
	}
}

func TestAssumeConfirmForget(t *testing.T) {
	c := New()
	c.AddNode(node("a"))
	p := pod("p", "a", "1")
	_ = c.AssumePod(p)
	if !c.IsAssumed("p") {
		t.Fatal("not assumed")
	}
	c.AddPod(p) // the informer saw the binding
	if c.IsAssumed("p") {
		t.Fatal("still assumed after confirmation")
	}
	c.ForgetPod(p) // confirmed pods are not forgotten
	s := NewSnapshot()
	c.UpdateSnapshot(s)
	if a, _ := s.Get("a"); a.Requested.MilliCPU != 1000 {
		t.Fatalf("confirmed pod lost: %d", a.Requested.MilliCPU)
	}
	q := pod("q", "a", "2")
	_ = c.AssumePod(q)
	c.ForgetPod(q)
	c.RemovePod(p)
	c.UpdateSnapshot(s)
	if a, _ := s.Get("a"); a.Requested.MilliCPU != 0 || len(a.Pods) != 0 {
		t.Fatalf("after forget and remove: %d, %d pods", a.Requested.MilliCPU, len(a.Pods))
	}
}

func TestRemoveNode(t *testing.T) {
	c := New()
	c.AddNode(node("a"))
	c.AddNode(node("b"))
	c.AddPod(pod("p", "a", "1"))
	s := NewSnapshot()
	c.UpdateSnapshot(s)
	c.RemoveNode("a")
	c.RemoveNode("b")
	c.UpdateSnapshot(s)
	if len(s.List()) != 0 {
		t.Fatalf("removed nodes still listed: %d", len(s.List()))
	}
	c.AddNode(node("a")) // comes back with its pod still accounted
	c.UpdateSnapshot(s)
	if a, ok := s.Get("a"); !ok || a.Requested.MilliCPU != 1000 || len(s.List()) != 1 {
		t.Fatalf("re-added node: %v %+v", ok, a)
	}
}
