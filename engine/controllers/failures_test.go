package controllers_test

import (
	"fmt"
	"strings"
	"testing"

	apps "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/engine/controllers/controllerutil"
	"github.com/podtrace/podtrace/engine/controllers/deployment"
	"github.com/podtrace/podtrace/engine/controllers/replicaset"
	"github.com/podtrace/podtrace/stages"
)

func TestQuotaRejectionRetriesWithFailedCreate(t *testing.T) {
	c := startCluster(t, false)
	quota := &v1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "pods", Namespace: ns},
		Spec: v1.ResourceQuotaSpec{Hard: v1.ResourceList{v1.ResourcePods: resource.MustParse("1")}}}
	if _, err := c.admin.CoreV1().ResourceQuotas(ns).Create(c.ctx, quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.admin.AppsV1().Deployments(ns).Create(c.ctx, newDeployment("web", 3, "nginx:1.27"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitFor("1 pod within quota", func() bool { return len(c.activePods()) == 1 })
	var rsName string
	c.waitFor("replica set", func() bool {
		rss := c.replicaSets()
		if len(rss) == 1 {
			rsName = rss[0].Name
		}
		return rsName != ""
	})
	c.waitFor("FailedCreate event with the quota error", func() bool {
		for _, e := range c.events("ReplicaSet", rsName, replicaset.Component) {
			if strings.HasPrefix(e, "FailedCreate: Error creating: pods ") && strings.Contains(e, "is forbidden: exceeded quota: pods") {
				return true
			}
		}
		return false
	})
	c.waitFor("ReplicaFailure condition", func() bool {
		for _, rs := range c.replicaSets() {
			for _, cond := range rs.Status.Conditions {
				if cond.Type == apps.ReplicaSetReplicaFailure && cond.Reason == "FailedCreate" && strings.Contains(cond.Message, "exceeded quota") {
					return true
				}
			}
		}
		return false
	})
	c.waitFor("retrying reconcile stage events", func() bool {
		n := 0
		for _, e := range c.env.Events() {
			if e.Stage == stages.Reconcile && e.Status == stages.Retrying && e.Kind == stages.KindReplicaSet && e.Pod == rsName &&
				e.Reason == "FailedCreate" && e.NextTry != nil && strings.Contains(e.Message, "exceeded quota") {
				n++
			}
		}
		return n >= 2
	})
	if err := c.admin.CoreV1().ResourceQuotas(ns).Delete(c.ctx, "pods", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitFor("3 pods once the quota is gone", func() bool { return len(c.activePods()) == 3 })
}

func TestForbiddenReplicaSetCreateRetries(t *testing.T) {
	c := startCluster(t, false)
	c.env.Tracer.Faults.Add(stages.Fault{Stage: stages.Reconcile, Kind: stages.Flake, Count: 2, Variant: "forbidden", Scope: stages.Scope{}})
	if _, err := c.admin.AppsV1().Deployments(ns).Create(c.ctx, newDeployment("web", 2, "nginx:1.27"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitFor("2 pods after the forbidden attempts", func() bool { return len(c.activePods()) == 2 })
	d := c.deployment("web")
	rsName := "web-" + controllerutil.ComputeHash(&d.Spec.Template, nil)
	wantMsg := fmt.Sprintf(`Failed to create new replica set %q: replicasets.apps is forbidden: User "%s" cannot create resource "replicasets" in API group "apps" in the namespace "default"`,
		rsName, deployment.DefaultUser)
	c.waitFor("ReplicaSetCreateError events", func() bool {
		for _, e := range c.events("Deployment", "web", deployment.Component) {
			if e == "ReplicaSetCreateError: "+wantMsg {
				return true
			}
		}
		return false
	})
	var lane []stages.Event
	for _, e := range c.env.Events() {
		if e.Stage == stages.Reconcile && e.Kind == stages.KindReplicaSet && e.Component == deployment.Component && e.Status != stages.Started {
			lane = append(lane, e)
		}
	}
	if len(lane) != 3 {
		t.Fatalf("replica set reconcile events = %+v", lane)
	}
	for i, e := range lane[:2] {
		if e.Status != stages.Retrying || e.Reason != "ReplicaSetCreateError" || e.Message != wantMsg || e.Pod != rsName || e.Attempt != i+1 || e.NextTry == nil {
			t.Fatalf("attempt %d = %+v", i+1, e)
		}
	}
	if e := lane[2]; e.Status != stages.Succeeded || e.Attempt != 3 || e.Message != "Scaled up replica set "+rsName+" from 0 to 2" {
		t.Fatalf("final = %+v", e)
	}
}
