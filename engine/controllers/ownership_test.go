package controllers_test

import (
	"strings"
	"testing"

	apps "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podtrace/podtrace/engine/controllers/replicaset"
)

func TestRelabeledPodIsReleasedAndReplaced(t *testing.T) {
	c := startCluster(t, false)
	if _, err := c.admin.AppsV1().Deployments(ns).Create(c.ctx, newDeployment("web", 2, "nginx:1.27"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitFor("2 pods", func() bool { return len(c.activePods()) == 2 })
	victim := c.activePods()[0]
	victim.Labels["app"] = "debug"
	if _, err := c.admin.CoreV1().Pods(ns).Update(c.ctx, &victim, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitFor("a replacement pod", func() bool {
		n := 0
		for _, p := range c.activePods() {
			if p.Labels["app"] == "web" {
				n++
			}
		}
		return n == 2
	})
	c.waitFor("the relabelled pod released", func() bool {
		p, err := c.admin.CoreV1().Pods(ns).Get(c.ctx, victim.Name, metav1.GetOptions{})
		return err == nil && metav1.GetControllerOf(p) == nil
	})
}

func TestOrphanPodIsAdopted(t *testing.T) {
	c := startCluster(t, false)
	orphan := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "stray", Namespace: ns, Labels: map[string]string{"app": "solo"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "web", Image: "nginx:1.27"}}}}
	if _, err := c.admin.CoreV1().Pods(ns).Create(c.ctx, orphan, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "solo"}
	rs := &apps.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "solo", Namespace: ns},
		Spec: apps.ReplicaSetSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: v1.PodSpec{Containers: []v1.Container{{Name: "web", Image: "nginx:1.27"}}}}}}
	created, err := c.admin.AppsV1().ReplicaSets(ns).Create(c.ctx, rs, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.waitFor("status replicas 2", func() bool {
		got, err := c.admin.AppsV1().ReplicaSets(ns).Get(c.ctx, "solo", metav1.GetOptions{})
		return err == nil && got.Status.Replicas == 2
	})
	if n := len(c.activePods()); n != 2 {
		t.Fatalf("%d pods, want the orphan plus one new", n)
	}
	p, err := c.admin.CoreV1().Pods(ns).Get(c.ctx, "stray", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(p); ref == nil || ref.UID != created.UID || ref.Kind != "ReplicaSet" {
		t.Fatalf("orphan's controller = %+v", ref)
	}
	if got := c.events("ReplicaSet", "solo", replicaset.Component); len(got) != 1 || !strings.HasPrefix(got[0], "SuccessfulCreate: Created pod: solo-") {
		t.Fatalf("events = %q, want one SuccessfulCreate", got)
	}
}
