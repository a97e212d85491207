package controllers_test

import (
	"fmt"
	"testing"
	"time"

	apps "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podtrace/podtrace/engine/controllers/controllerutil"
)

func progressing(s apps.DeploymentStatus) *apps.DeploymentCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == apps.DeploymentProgressing {
			return &s.Conditions[i]
		}
	}
	return nil
}

func TestProgressDeadlineExceededOnEngineClock(t *testing.T) {
	c := startCluster(t, false) // no kubelet: the pods never become ready
	if _, err := c.admin.AppsV1().Deployments(ns).Create(c.ctx, newDeployment("web", 2, "nginx:1.27"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitFor("2 pods", func() bool { return len(c.activePods()) == 2 })
	d := c.deployment("web")
	if d.Spec.ProgressDeadlineSeconds == nil || *d.Spec.ProgressDeadlineSeconds != 600 {
		t.Fatalf("progressDeadlineSeconds = %v, want the default 600", d.Spec.ProgressDeadlineSeconds)
	}
	rsName := "web-" + controllerutil.ComputeHash(&d.Spec.Template, nil)
	c.waitFor("status settled", func() bool {
		s := c.deployment("web").Status
		return s.Replicas == 2 && s.UnavailableReplicas == 2 && progressing(s) != nil
	})
	if p := progressing(c.deployment("web").Status); p.Reason == "ProgressDeadlineExceeded" {
		t.Fatal("timed out before the engine clock moved")
	}
	// Ten minutes pass on the engine clock, a minute at a time.
	want := fmt.Sprintf("ReplicaSet %q has timed out progressing.", rsName)
	c.waitFor("ProgressDeadlineExceeded", func() bool {
		p := progressing(c.deployment("web").Status)
		if p != nil && p.Reason == "ProgressDeadlineExceeded" {
			return p.Status == v1.ConditionFalse && p.Message == want
		}
		if err := c.env.Clock.Advance(time.Minute); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
		return false
	})
}

func TestPausedDeploymentWaitsForResume(t *testing.T) {
	c := startCluster(t, true)
	d := newDeployment("web", 3, "nginx:1.27")
	d.Spec.Paused = true
	if _, err := c.admin.AppsV1().Deployments(ns).Create(c.ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitFor("DeploymentPaused", func() bool {
		p := progressing(c.deployment("web").Status)
		return p != nil && p.Reason == "DeploymentPaused" && p.Status == v1.ConditionUnknown && p.Message == "Deployment is paused"
	})
	if rss := c.replicaSets(); len(rss) != 0 {
		t.Fatalf("a paused deployment created %v", rsNames(rss))
	}
	// As `kubectl rollout resume` does: a patch, which cannot conflict with
	// the controller's own status writes.
	if _, err := c.admin.AppsV1().Deployments(ns).Patch(c.ctx, "web", types.MergePatchType,
		[]byte(`{"spec":{"paused":false}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitFor("3 available after resume", func() bool { return c.deployment("web").Status.AvailableReplicas == 3 })
	c.waitFor("NewReplicaSetAvailable", func() bool {
		p := progressing(c.deployment("web").Status)
		return p != nil && p.Reason == "NewReplicaSetAvailable"
	})
}
