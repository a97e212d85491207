package controllers_test

import (
	"fmt"
	"strings"
	"testing"

	apps "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/engine/controllers/controllerutil"
	"github.com/podtrace/podtrace/engine/controllers/deployment"
	"github.com/podtrace/podtrace/engine/controllers/replicaset"
	"github.com/podtrace/podtrace/stages"
)

func TestImageChangeRollsOutNewReplicaSet(t *testing.T) {
	c := startCluster(t, true)
	if _, err := c.admin.AppsV1().Deployments(ns).Create(c.ctx, newDeployment("web", 3, "nginx:1.27"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitFor("3 available", func() bool { return c.deployment("web").Status.AvailableReplicas == 3 })
	oldRS := c.replicaSets()[0]
	d := c.deployment("web")
	d.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
	d, err := c.admin.AppsV1().Deployments(ns).Update(c.ctx, d, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	newName := "web-" + controllerutil.ComputeHash(&d.Spec.Template, nil)
	c.waitFor("rollout complete", func() bool {
		s := c.deployment("web").Status
		return s.UpdatedReplicas == 3 && s.Replicas == 3 && s.AvailableReplicas == 3 && s.ObservedGeneration == d.Generation
	})
	c.waitFor("old replica set at 0", func() bool {
		for _, rs := range c.replicaSets() {
			if rs.Name == oldRS.Name {
				return *rs.Spec.Replicas == 0 && rs.Status.Replicas == 0
			}
		}
		return false
	})
	rss := c.replicaSets()
	if len(rss) != 2 {
		t.Fatalf("replica sets = %v", rsNames(rss))
	}
	for _, rs := range rss {
		if rs.Name == newName && (*rs.Spec.Replicas != 3 || rs.Annotations[deployment.RevisionAnnotation] != "2") {
			t.Fatalf("new replica set %s: replicas %d revision %q", rs.Name, *rs.Spec.Replicas, rs.Annotations[deployment.RevisionAnnotation])
		}
	}
	for _, p := range c.activePods() {
		if p.Spec.Containers[0].Image != "nginx:1.28" || !strings.HasPrefix(p.Name, newName+"-") {
			t.Fatalf("pod %s runs %s after the rollout", p.Name, p.Spec.Containers[0].Image)
		}
	}
	if got := c.deployment("web").Annotations[deployment.RevisionAnnotation]; got != "2" {
		t.Fatalf("deployment revision = %q, want 2", got)
	}
	// maxSurge 25% of 3 = 1 and maxUnavailable 0: the rollout goes one pod at a time.
	evs := c.events("Deployment", "web", deployment.Component)
	for _, want := range []string{
		"ScalingReplicaSet: Scaled up replica set " + newName + " from 0 to 1",
		"ScalingReplicaSet: Scaled down replica set " + oldRS.Name + " from 3 to 2",
		"ScalingReplicaSet: Scaled down replica set " + oldRS.Name + " from 1 to 0",
		"ScalingReplicaSet: Scaled up replica set " + newName + " from 2 to 3",
	} {
		if !contains(evs, want) {
			t.Errorf("missing event %q in %q", want, evs)
		}
	}
}

func TestRecreateScalesOldToZeroBeforeNew(t *testing.T) {
	c := startCluster(t, true)
	d := newDeployment("web", 2, "nginx:1.27")
	d.Spec.Strategy = apps.DeploymentStrategy{Type: apps.RecreateDeploymentStrategyType}
	if _, err := c.admin.AppsV1().Deployments(ns).Create(c.ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitFor("2 available", func() bool { return c.deployment("web").Status.AvailableReplicas == 2 })
	oldName := c.replicaSets()[0].Name
	d = c.deployment("web")
	d.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
	d, err := c.admin.AppsV1().Deployments(ns).Update(c.ctx, d, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	newName := "web-" + controllerutil.ComputeHash(&d.Spec.Template, nil)
	c.waitFor("recreated", func() bool {
		s := c.deployment("web").Status
		pods := c.activePods()
		for _, p := range pods {
			if p.Spec.Containers[0].Image != "nginx:1.28" {
				return false
			}
		}
		return len(pods) == 2 && s.ObservedGeneration == d.Generation && s.UpdatedReplicas == 2 && s.Replicas == 2 && s.AvailableReplicas == 2
	})
	// Stage events are emitted in order: the old replica set must reach 0
	// before the new one is created.
	down, up := -1, -1
	for i, e := range c.env.Events() {
		if e.Stage != stages.Reconcile || e.Status != stages.Succeeded || e.Component != deployment.Component {
			continue
		}
		switch e.Message {
		case "Scaled down replica set " + oldName + " from 2 to 0":
			down = i
		case "Scaled up replica set " + newName + " from 0 to 2":
			up = i
		}
	}
	if down < 0 || up < 0 || up < down {
		t.Fatalf("scale-down event #%d, scale-up event #%d; want the old replica set emptied first", down, up)
	}
	want := []string{
		"ScalingReplicaSet: Scaled down replica set " + oldName + " from 2 to 0",
		"ScalingReplicaSet: Scaled up replica set " + oldName + " from 0 to 2",
		"ScalingReplicaSet: Scaled up replica set " + newName + " from 0 to 2",
	}
	c.waitFor("recreate events", func() bool {
		return fmt.Sprint(c.events("Deployment", "web", deployment.Component)) == fmt.Sprint(want)
	})
}

func TestDeploymentScales3To5To2(t *testing.T) {
	c := startCluster(t, true)
	if _, err := c.admin.AppsV1().Deployments(ns).Create(c.ctx, newDeployment("web", 3, "nginx:1.27"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitFor("3 available", func() bool { return c.deployment("web").Status.AvailableReplicas == 3 })
	rsName := c.replicaSets()[0].Name
	c.scale("web", 5)
	c.waitFor("5 pods", func() bool { return len(c.activePods()) == 5 })
	c.waitFor("5 available", func() bool { return c.deployment("web").Status.AvailableReplicas == 5 })
	c.scale("web", 2)
	c.waitFor("2 pods", func() bool { return len(c.activePods()) == 2 })
	c.waitFor("status replicas 2", func() bool {
		s := c.deployment("web").Status
		return s.Replicas == 2 && s.AvailableReplicas == 2 && s.UpdatedReplicas == 2
	})
	if rss := c.replicaSets(); len(rss) != 1 || *rss[0].Spec.Replicas != 2 || rss[0].Annotations[deployment.DesiredReplicasAnnotation] != "2" {
		t.Fatalf("replica sets after scaling: %v", rsNames(rss))
	}
	want := []string{
		"ScalingReplicaSet: Scaled down replica set " + rsName + " from 5 to 2",
		"ScalingReplicaSet: Scaled up replica set " + rsName + " from 0 to 3",
		"ScalingReplicaSet: Scaled up replica set " + rsName + " from 3 to 5",
	}
	c.waitFor("scaling events", func() bool {
		return fmt.Sprint(c.events("Deployment", "web", deployment.Component)) == fmt.Sprint(want)
	})
	c.waitFor("3 SuccessfulDelete events", func() bool {
		n := 0
		for _, e := range c.events("ReplicaSet", rsName, replicaset.Component) {
			if strings.HasPrefix(e, "SuccessfulDelete: Deleted pod: "+rsName+"-") {
				n++
			}
		}
		return n == 3
	})
}
