package controllers_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	apps "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/podtrace/podtrace/engine/controllers/controllerutil"
	"github.com/podtrace/podtrace/engine/controllers/deployment"
	"github.com/podtrace/podtrace/engine/controllers/replicaset"
	"github.com/podtrace/podtrace/engine/enginetest"
	"github.com/podtrace/podtrace/stages"
)

const ns = "default"

var saGroups = []string{"system:serviceaccounts", "system:serviceaccounts:kube-system"}

// cluster is a real API server with both controllers running under their own identities.
type cluster struct {
	t     *testing.T
	env   *enginetest.Env
	admin kubernetes.Interface
	ctx   context.Context
}

func startCluster(t *testing.T, kubelet bool) *cluster {
	t.Helper()
	env := enginetest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	rs, err := replicaset.New(replicaset.Config{Client: env.ClientFor(t, replicaset.DefaultUser, saGroups...), Clock: env.Clock, Tracer: env.Tracer})
	if err != nil {
		t.Fatal(err)
	}
	dc, err := deployment.New(deployment.Config{Client: env.ClientFor(t, deployment.DefaultUser, saGroups...), Clock: env.Clock, Tracer: env.Tracer})
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := dc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, env: env, admin: env.Admin(), ctx: ctx}
	if kubelet {
		go c.fakeKubelet()
	}
	return c
}

// fakeKubelet marks every pod Running and Ready, as a kubelet would once its containers start.

func (c *cluster) fakeKubelet() {
	for c.ctx.Err() == nil {
		pods, err := c.admin.CoreV1().Pods(ns).List(c.ctx, metav1.ListOptions{})
		if err == nil {
			for i := range pods.Items {
				p := &pods.Items[i]
				if p.Status.Phase == v1.PodRunning || p.DeletionTimestamp != nil {
					continue
				}
				now := metav1.NewTime(c.env.Clock.Now())
				p.Status.Phase = v1.PodRunning
				p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: now}}
				_, _ = c.admin.CoreV1().Pods(ns).UpdateStatus(c.ctx, p, metav1.UpdateOptions{})
			}
		}
		time.Sleep(30 * time.Millisecond)
	}
}

func newDeployment(name string, replicas int32, image string) *apps.Deployment {
	labels := map[string]string{"app": name}
	return &apps.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: apps.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: v1.PodSpec{Containers: []v1.Container{{Name: "web", Image: image}}}},
		},
	}
}

func (c *cluster) deployment(name string) *apps.Deployment {
	d, err := c.admin.AppsV1().Deployments(ns).Get(c.ctx, name, metav1.GetOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return d
}

func (c *cluster) replicaSets() []apps.ReplicaSet {
	l, err := c.admin.AppsV1().ReplicaSets(ns).List(c.ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	sort.Slice(l.Items, func(i, j int) bool { return l.Items[i].Name < l.Items[j].Name })
	return l.Items
}

// activePods returns the pods not being deleted.

func (c *cluster) activePods() []v1.Pod {
	l, err := c.admin.CoreV1().Pods(ns).List(c.ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	var out []v1.Pod
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// events returns "Reason: message" of the core Events about kind/name from source.

func (c *cluster) events(kind, name, source string) []string {
	l, err := c.admin.CoreV1().Events(ns).List(c.ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	var out []string
	for _, e := range l.Items {
		if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name && e.Source.Component == source {
			out = append(out, e.Reason+": "+e.Message)
		}
	}
	sort.Strings(out)
	return out
}

func (c *cluster) waitFor(what string, cond func() bool) {
	c.t.Helper()
	enginetest.WaitFor(c.t, 30*time.Second, what, cond)
}

func (c *cluster) scale(name string, replicas int32) {
	c.t.Helper()
	d := c.deployment(name)
	d.Spec.Replicas = ptr.To(replicas)
	if _, err := c.admin.AppsV1().Deployments(ns).Update(c.ctx, d, metav1.UpdateOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

func TestDeploymentYieldsOneReplicaSetAndThreePods(t *testing.T) {
	c := startCluster(t, true)
	if _, err := c.admin.AppsV1().Deployments(ns).Create(c.ctx, newDeployment("web", 3, "nginx:1.27"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitFor("3 pods", func() bool { return len(c.activePods()) == 3 })
	d := c.deployment("web")
	hash := controllerutil.ComputeHash(&d.Spec.Template, nil)
	rss := c.replicaSets()
	if len(rss) != 1 || rss[0].Name != "web-"+hash {
		t.Fatalf("replica sets = %v, want exactly web-%s", rsNames(rss), hash)
	}
	rs := rss[0]
	ref := metav1.GetControllerOf(&rs)
	if ref == nil || ref.Kind != "Deployment" || ref.Name != "web" || ref.UID != d.UID || !*ref.BlockOwnerDeletion {
		t.Fatalf("replica set controller ref = %+v", ref)
	}
	for k, v := range map[string]string{deployment.RevisionAnnotation: "1", deployment.DesiredReplicasAnnotation: "3", deployment.MaxReplicasAnnotation: "4"} {
		if rs.Annotations[k] != v {
			t.Errorf("replica set annotation %s = %q, want %q", k, rs.Annotations[k], v)
		}
	}
	if rs.Labels[apps.DefaultDeploymentUniqueLabelKey] != hash || rs.Spec.Selector.MatchLabels[apps.DefaultDeploymentUniqueLabelKey] != hash {
		t.Errorf("replica set labels %v selector %v lack pod-template-hash %s", rs.Labels, rs.Spec.Selector.MatchLabels, hash)
	}
	var created []string
	for _, p := range c.activePods() {
		ref := metav1.GetControllerOf(&p)
		if ref == nil || ref.Kind != "ReplicaSet" || ref.Name != rs.Name || ref.UID != rs.UID || !*ref.BlockOwnerDeletion {
			t.Fatalf("pod %s controller ref = %+v", p.Name, ref)
		}
		if !strings.HasPrefix(p.Name, rs.Name+"-") || p.Labels[apps.DefaultDeploymentUniqueLabelKey] != hash || p.Labels["app"] != "web" {
			t.Fatalf("pod %s labels %v", p.Name, p.Labels)
		}
		created = append(created, "SuccessfulCreate: Created pod: "+p.Name)
	}
	sort.Strings(created)
	c.waitFor("ScalingReplicaSet event", func() bool {
		got := c.events("Deployment", "web", deployment.Component)
		return len(got) == 1 && got[0] == "ScalingReplicaSet: Scaled up replica set "+rs.Name+" from 0 to 3"
	})
	c.waitFor("SuccessfulCreate events", func() bool {
		return fmt.Sprint(c.events("ReplicaSet", rs.Name, replicaset.Component)) == fmt.Sprint(created)
	})
	c.waitFor("deployment complete", func() bool {
		s := c.deployment("web").Status
		return s.Replicas == 3 && s.UpdatedReplicas == 3 && s.ReadyReplicas == 3 && s.AvailableReplicas == 3 && s.UnavailableReplicas == 0 && s.ObservedGeneration == d.Generation
	})
	c.waitFor("conditions", func() bool {
		s := c.deployment("web").Status
		return hasCondition(s, apps.DeploymentAvailable, "MinimumReplicasAvailable", "Deployment has minimum availability.") &&
			hasCondition(s, apps.DeploymentProgressing, "NewReplicaSetAvailable", fmt.Sprintf("ReplicaSet %q has successfully progressed.", rs.Name))
	})
	// Stage events: one reconcile lane for the replica set, one per pod.
	c.waitFor("reconcile stage events", func() bool {
		var rsDone, podsDone int
		for _, e := range c.env.Events() {
			if e.Stage != stages.Reconcile || e.Status != stages.Succeeded {
				continue
			}
			switch {
			case e.Kind == stages.KindReplicaSet && e.Pod == rs.Name && e.Component == deployment.Component && e.Reason == "ScalingReplicaSet":
				rsDone++
			case e.Kind == stages.KindPod && e.Component == replicaset.Component && e.Message == "Created pod: "+e.Pod:
				podsDone++
			}
		}
		return rsDone == 1 && podsDone == 3
	})
}

func hasCondition(s apps.DeploymentStatus, t apps.DeploymentConditionType, reason, msg string) bool {
	for _, c := range s.Conditions {
		if c.Type == t && c.Reason == reason && c.Message == msg {
			return true
		}
	}
	return false
}

func rsNames(rss []apps.ReplicaSet) []string {
	var out []string
	for _, rs := range rss {
		out = append(out, fmt.Sprintf("%s(%d)", rs.Name, *rs.Spec.Replicas))
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
