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
	"k8s.io/apimachinery/pkg/api/resource"
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
