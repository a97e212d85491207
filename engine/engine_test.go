package engine_test

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/enginetest"
	"github.com/podtrace/podtrace/engine/logs"
	"github.com/podtrace/podtrace/engine/nodes"
	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/internal/testproc"
	"github.com/podtrace/podtrace/internal/waittest"
	"github.com/podtrace/podtrace/stages"
)

type recorder = trace.Recording

func record(e *engine.Engine) *recorder { return e.Hub.Record() }

// start runs a cluster of n nodes for one test and records its stages.
func start(t *testing.T, n int) (*engine.Engine, *recorder) {
	t.Helper()
	logs.To(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	e, err := engine.Start(ctx, engine.Config{DataDir: enginetest.DataDir(t), UnsafeNoFsync: true, Nodes: nodes.Defaults(n), Speed: 20, Seed: 1})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	r := record(e)
	t.Cleanup(func() { cancel(); e.Close() })
	return e, r
}

func deployment(name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}}}}}
}

func waitReady(t *testing.T, e *engine.Engine, selector string, want int, rec *recorder) []corev1.Pod {
	t.Helper()
	ready := false
	defer func() { // on a time-out, the kubelet's stages say where the pods are
		if ready {
			return
		}
		for _, ev := range rec.Events() {
			if ev.Kind == stages.KindPod && ev.Stage.Index() >= stages.Kubelet.Index() {
				t.Logf("%s %s %s %s %s", ev.Pod, ev.Stage, ev.Status, ev.Reason, ev.Message)
			}
		}
	}()
	var pods []corev1.Pod
	waittest.EventuallyEvery(t, fmt.Sprintf("%d Ready pods %s", want, selector), 50*time.Millisecond, 2*time.Minute, func() (bool, string) {
		list, err := e.AdminClient().CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err.Error()
		}
		pods = list.Items
		n, state := 0, ""
		for _, p := range pods {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					n++
				}
			}
			state += fmt.Sprintf("pod %s node=%q phase=%s conditions=%v containers=%v\n", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Conditions, p.Status.ContainerStatuses)
		}
		return n == want && len(pods) == want, state
	})
	ready = true
	return pods
}

func TestDeploymentReachesReadyThroughEveryStage(t *testing.T) {
	if testproc.OwnProcess(t) {
		return
	}
	e, rec := start(t, 3)
	var want []stages.ID
	for _, s := range stages.Lifecycle {
		if s != stages.Hooks { // the pods have no postStart hook
			want = append(want, s)
		}
	}
	deploymentThroughEveryStage(t, e, rec, want)
}

// deploymentThroughEveryStage creates a 3-replica Deployment and checks
// that each pod reaches Ready through the want stages in order, and that the
// API holds the Events a real cluster shows.
func deploymentThroughEveryStage(t *testing.T, e *engine.Engine, rec *recorder, want []stages.ID) {
	ctx := context.Background()
	// Everything listens on loopback (the README says so).
	for _, u := range append([]string{e.API.URL}, e.Etcd.Endpoints...) {
		if !strings.Contains(u, "://127.0.0.1:") {
			t.Errorf("%s does not listen on 127.0.0.1", u)
		}
	}
	if _, err := e.AdminClient().AppsV1().Deployments("default").Create(ctx, deployment("web", 3), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := waitReady(t, e, "app=web", 3, rec)
	rss, err := e.AdminClient().AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{})
	if err != nil || len(rss.Items) != 1 {
		t.Fatalf("want one ReplicaSet, got %v %v", rss, err)
	}
	nodesUsed := map[string]bool{}
	for _, p := range pods {
		nodesUsed[p.Spec.NodeName] = true
		if len(p.OwnerReferences) != 1 || p.OwnerReferences[0].Name != rss.Items[0].Name {
			t.Errorf("pod %s owner refs %v", p.Name, p.OwnerReferences)
		}
	}
	if len(nodesUsed) != 3 {
		t.Errorf("pods spread over %d nodes, want 3", len(nodesUsed))
	}
	// Every pod's stream has authn → ready in order: each stage succeeds,
	// and the stages begin in lifecycle order (a stage's end may race the
	// next one's start: the scheduler sees the pod as soon as etcd has it).
	for _, p := range pods {
		var seen []stages.ID
		succeeded := map[stages.ID]bool{}
		for _, ev := range rec.Events() {
			if ev.Kind == stages.KindPod && ev.Pod == p.Name && (ev.Verb == "" || ev.Verb == "create") {
				if ev.Status == stages.Succeeded {
					succeeded[ev.Stage] = true
				}
				// A controller's create is its reconcile stage: it begins
				// before the API stages of its request.
				if ev.Stage != stages.Reconcile && (len(seen) == 0 || seen[len(seen)-1] != ev.Stage) {
					seen = append(seen, ev.Stage)
				}
			}
		}
		firsts := map[stages.ID]int{}
		for i, s := range seen {
			if _, ok := firsts[s]; !ok {
				firsts[s] = i
			}
		}
		order := make([]stages.ID, 0, len(firsts))
		for s := range firsts {
			order = append(order, s)
		}
		sort.Slice(order, func(i, j int) bool { return firsts[order[i]] < firsts[order[j]] })
		for _, w := range want {
			if !succeeded[w] {
				t.Errorf("pod %s: no succeeded %s stage (saw %v)", p.Name, w, order)
			}
		}
		for i := 1; i < len(order); i++ {
			if !order[i-1].Before(order[i]) {
				t.Errorf("pod %s: stages out of order: %v", p.Name, order)
				break
			}
		}
	}
	// The Events a real cluster would show for the pods are in the API (the
	// event broadcasters write them a moment after the pods are Ready).
	wantEvents := []string{"ScalingReplicaSet", "SuccessfulCreate", "Scheduled", "Pulling", "Pulled", "Created", "Started"}
	var evs *corev1.EventList
	reasons := map[string]bool{}
	enginetest.WaitFor(t, 30*time.Second, "the pods' Events", func() bool {
		var err error
		if evs, err = e.AdminClient().CoreV1().Events("default").List(ctx, metav1.ListOptions{}); err != nil {
			return false
		}
		reasons = map[string]bool{}
		for _, ev := range evs.Items {
			reasons[ev.Reason] = true
		}
		for _, r := range wantEvents {
			if !reasons[r] {
				return false
			}
		}
		return true
	})
	nodeOf := map[string]string{}
	for _, p := range pods {
		nodeOf[p.Name] = p.Spec.NodeName
	}
	for _, ev := range evs.Items {
		// Kubelets share event broadcasters; each event still names its own node.
		if ev.Reason == "Started" && ev.Source != (corev1.EventSource{Component: "kubelet", Host: nodeOf[ev.InvolvedObject.Name]}) {
			t.Errorf("Started event of pod %s from %+v, want kubelet on %s", ev.InvolvedObject.Name, ev.Source, nodeOf[ev.InvolvedObject.Name])
		}
	}
	for _, r := range wantEvents {
		if !reasons[r] {
			t.Errorf("no %s event in the API (have %v)", r, reasons)
		}
	}
}

func TestFailedSchedulingMessagesMatchKubeScheduler(t *testing.T) {
	if testproc.OwnProcess(t) {
		return
	}
	logs.To(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	specs := nodes.Defaults(3)
	specs[0].Taints = []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	e, err := engine.Start(ctx, engine.Config{DataDir: enginetest.DataDir(t), UnsafeNoFsync: true, Nodes: specs, Speed: 20, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	waitNodes(t, e, 3) // the message counts the nodes there are
	mk := func(name string, edit func(*corev1.PodSpec)) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}}
		edit(&p.Spec)
		if _, err := e.AdminClient().CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mk("too-big", func(s *corev1.PodSpec) {
		s.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}
	})
	mk("selector", func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{"disktype": "ssd"} })
	mk("gpu-only", func(s *corev1.PodSpec) {
		s.NodeName = ""
		s.NodeSelector = map[string]string{"kubernetes.io/hostname": "node-1"}
	})
	// The words of kube-scheduler 1.36.3: TaintToleration and an over-allocatable
	// request are UnschedulableAndUnresolvable, so preemption cannot help.
	want := map[string]string{
		"too-big":  "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu. no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
		"selector": "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 node(s) didn't match Pod's node affinity/selector. no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
		"gpu-only": "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 node(s) didn't match Pod's node affinity/selector. no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
	}
	for name, msg := range want {
		enginetest.WaitFor(t, 20*time.Second, name+" FailedScheduling", func() bool {
			evs, err := e.AdminClient().CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name + ",reason=FailedScheduling"})
			return err == nil && len(evs.Items) > 0
		})
		evs, _ := e.AdminClient().CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name + ",reason=FailedScheduling"})
		if got := evs.Items[0].Message; got != msg {
			t.Errorf("%s:\n got %s\nwant %s", name, got, msg)
		}
		// kube-scheduler records the event and patches the pod's condition
		// separately; wait for the condition too.
		var p *corev1.Pod
		var cond corev1.PodCondition
		enginetest.WaitFor(t, 20*time.Second, name+" PodScheduled=False", func() bool {
			p, _ = e.AdminClient().CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled {
					cond = c
				}
			}
			return cond.Status == corev1.ConditionFalse
		})
		if p.Status.Phase != corev1.PodPending || cond.Status != corev1.ConditionFalse || cond.Reason != "Unschedulable" || cond.Message != msg {
			t.Errorf("%s: phase %s, PodScheduled %+v", name, p.Status.Phase, cond)
		}
	}
}

func TestDeletingDeploymentTearsDownEveryPod(t *testing.T) {
	if testproc.OwnProcess(t) {
		return
	}
	e, rec := start(t, 3)
	deletingDeploymentTearsDownEveryPod(t, e, rec)
}

// deletingDeploymentTearsDownEveryPod deletes a Ready 3-replica Deployment
// and checks every pod's way down: terminate, cleanup, delete.
func deletingDeploymentTearsDownEveryPod(t *testing.T, e *engine.Engine, rec *recorder) {
	ctx := context.Background()
	d := deployment("gone", 3)
	grace := int64(1)
	d.Spec.Template.Spec.TerminationGracePeriodSeconds = &grace
	if _, err := e.AdminClient().AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := waitReady(t, e, "app=gone", 3, rec)
	if err := e.AdminClient().AppsV1().Deployments("default").Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			ps, _ := e.AdminClient().CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
			for _, p := range ps.Items {
				t.Logf("left: pod %s deletionTimestamp=%v phase=%s owner=%v", p.Name, p.DeletionTimestamp, p.Status.Phase, p.OwnerReferences)
			}
			rs, _ := e.AdminClient().AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{})
			for _, r := range rs.Items {
				t.Logf("left: rs %s deletionTimestamp=%v finalizers=%v owner=%v", r.Name, r.DeletionTimestamp, r.Finalizers, r.OwnerReferences)
			}
		}
	}()
	enginetest.WaitFor(t, 30*time.Second, "pods and replica sets gone", func() bool {
		ps, err1 := e.AdminClient().CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=gone"})
		rs, err2 := e.AdminClient().AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{LabelSelector: "app=gone"})
		return err1 == nil && err2 == nil && len(ps.Items) == 0 && len(rs.Items) == 0
	})
	teardown := func(pod string) []stages.ID {
		var got []stages.ID
		for _, ev := range rec.Events() {
			if ev.Pod == pod && ev.Status == stages.Succeeded && (ev.Stage == stages.Terminate || ev.Stage == stages.Cleanup || ev.Stage == stages.Delete) {
				got = append(got, ev.Stage)
			}
		}
		return got
	}
	// The delete stage reaches the recording a moment after the pod is gone.
	enginetest.WaitFor(t, 10*time.Second, "every pod's delete stage", func() bool {
		for _, p := range pods {
			if got := teardown(p.Name); len(got) == 0 || got[len(got)-1] != stages.Delete {
				return false
			}
		}
		return true
	})
	for _, p := range pods {
		got := teardown(p.Name)
		if len(got) < 3 || got[0] != stages.Terminate || got[len(got)-2] != stages.Cleanup || got[len(got)-1] != stages.Delete {
			t.Errorf("pod %s teardown stages = %v, want terminate, cleanup, delete", p.Name, got)
		}
	}
}

func TestDeletingNamespaceEmptiesItFirst(t *testing.T) {
	if testproc.OwnProcess(t) {
		return
	}
	e, _ := start(t, 1)
	ctx := context.Background()
	admin := e.AdminClient()
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d := deployment("app", 1)
	d.Namespace = "team"
	enginetest.WaitFor(t, 10*time.Second, "default service account in team", func() bool {
		_, err := admin.AppsV1().Deployments("team").Create(ctx, d, metav1.CreateOptions{})
		return err == nil
	})
	if err := admin.CoreV1().Namespaces().Delete(ctx, "team", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ns, err := admin.CoreV1().Namespaces().Get(ctx, "team", metav1.GetOptions{})
	if err == nil && ns.Status.Phase != corev1.NamespaceTerminating {
		t.Fatalf("namespace phase %s right after delete, want Terminating", ns.Status.Phase)
	}
	enginetest.WaitFor(t, 60*time.Second, "namespace team gone", func() bool {
		_, err := admin.CoreV1().Namespaces().Get(ctx, "team", metav1.GetOptions{})
		return err != nil
	})
	if pods, _ := admin.CoreV1().Pods("team").List(ctx, metav1.ListOptions{}); len(pods.Items) != 0 {
		t.Fatalf("pods left in a deleted namespace: %d", len(pods.Items))
	}
}
