package rows

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/podtrace/podtrace/stages"
)

func TestOf(t *testing.T) {
	t.Parallel()
	now := time.Now()
	created := metav1.NewTime(now.Add(-90 * time.Second))
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: "shop", CreationTimestamp: created, UID: types.UID("u-" + name)}
	}
	crashing := &corev1.Pod{ObjectMeta: meta("web-1"), Spec: corev1.PodSpec{NodeName: "node-1",
		Containers: []corev1.Container{{Name: "app"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
				{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", ImageID: "sha256:1", RestartCount: 2,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 1, Reason: "Error", FinishedAt: metav1.NewTime(now.Add(-5 * time.Second))}}}}}}
	crashing.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web", Controller: ptr.To(true)}}
	running := &corev1.Pod{ObjectMeta: meta("web-2"), Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
				{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", ImageID: "sha256:1", Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
	pulling := &corev1.Pod{ObjectMeta: meta("web-3"), Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}}}}}
	deploy := &appsv1.Deployment{ObjectMeta: meta("shop"), Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](4)},
		Status: appsv1.DeploymentStatus{ReadyReplicas: 2}}
	rs := &appsv1.ReplicaSet{ObjectMeta: meta("shop-7d9f"), Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](3)},
		Status: appsv1.ReplicaSetStatus{ReadyReplicas: 3}}
	sts := &appsv1.StatefulSet{ObjectMeta: meta("db"), Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2)}}
	ds := &appsv1.DaemonSet{ObjectMeta: meta("agent"), Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, NumberReady: 1}}
	job := &batchv1.Job{ObjectMeta: meta("migrate"), Spec: batchv1.JobSpec{Completions: ptr.To[int32](1)},
		Status: batchv1.JobStatus{Succeeded: 1, Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}}}

	for _, tc := range []struct {
		obj                        runtime.Object
		kind, ready, status, phase string
		restarts, owner            string
		done, notDone              []stages.ID
	}{
		{obj: crashing, kind: stages.KindPod, ready: "0/1", status: "CrashLoopBackOff", phase: "Running",
			restarts: "2 (5s ago)", owner: "ReplicaSet/web",
			done: []stages.ID{stages.Persist, stages.Reconcile, stages.Bind, stages.CNI, stages.Pull}, notDone: []stages.ID{stages.Start, stages.Ready}},
		{obj: running, kind: stages.KindPod, ready: "1/1", status: "Running", phase: "Running", restarts: "0",
			done: []stages.ID{stages.Start, stages.Ready}, notDone: []stages.ID{stages.Reconcile}},
		{obj: pulling, kind: stages.KindPod, ready: "0/1", status: "ImagePullBackOff", phase: "Pending", restarts: "0",
			done: []stages.ID{stages.Schedule}, notDone: []stages.ID{stages.Sandbox, stages.Pull, stages.Start}},
		{obj: deploy, kind: stages.KindDeployment, ready: "2/4", phase: "Progressing"},
		{obj: rs, kind: stages.KindReplicaSet, ready: "3/3", phase: "Ready"},
		{obj: sts, kind: stages.KindStatefulSet, ready: "0/2", phase: "Progressing"},
		{obj: ds, kind: stages.KindDaemonSet, ready: "1/3", phase: "Progressing"},
		{obj: job, kind: stages.KindJob, ready: "1/1", status: "Complete", phase: "Ready"},
	} {
		r, ok, err := Of(tc.obj, now)
		if err != nil || !ok {
			t.Fatalf("Of(%T): %v %v", tc.obj, ok, err)
		}
		if r.Kind != tc.kind || r.Ready != tc.ready || r.Status != tc.status || r.Phase != tc.phase ||
			r.Restarts != tc.restarts || r.Owner != tc.owner || !r.Created.Equal(created.Time) || r.Namespace != "shop" {
			t.Errorf("%s %s: got %+v, want ready %q status %q phase %q restarts %q owner %q",
				tc.kind, r.Name, r, tc.ready, tc.status, tc.phase, tc.restarts, tc.owner)
		}
		for _, s := range tc.done {
			if !slices.Contains(r.Done, s) {
				t.Errorf("%s %s: %s not done in %v", tc.kind, r.Name, s, r.Done)
			}
		}
		for _, s := range tc.notDone {
			if slices.Contains(r.Done, s) {
				t.Errorf("%s %s: %s done in %v", tc.kind, r.Name, s, r.Done)
			}
		}
	}
	if _, ok, err := Of(&corev1.ConfigMap{}, now); ok || err != nil {
		t.Errorf("a ConfigMap has no lane: %v %v", ok, err)
	}
	terminating := running.DeepCopy()
	terminating.DeletionTimestamp = &created
	if r, _, _ := Of(terminating, now); r.Status != "Terminating" || r.Phase != "Terminating" {
		t.Errorf("terminating pod: %q %q", r.Status, r.Phase)
	}
	if r := Deleted(stages.Row{Kind: stages.KindPod, Status: "Running"}, now); !r.Deleted || !strings.Contains(r.Status, "Deleted") {
		t.Errorf("deleted: %+v", r)
	}
}

// A reader gets each object's rows in the order they changed, always
// ending on the latest; pushing never waits for it.
func TestFeed(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := NewFeed(ctx)
	want := []string{"Pending", "ContainerCreating", "Running"}
	for i := 0; i < 1000; i++ { // far more than the channel holds: never blocks
		f.Push(stages.Row{Kind: stages.KindPod, Namespace: "ns", Name: "b", Status: "Pending"})
	}
	for _, st := range want {
		f.Push(stages.Row{Kind: stages.KindPod, Namespace: "ns", Name: "a", Status: st})
	}
	var a []string
	for a == nil || a[len(a)-1] != "Running" {
		select {
		case r := <-f.C():
			if r.Name == "a" {
				a = append(a, r.Status)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("rows of a so far: %v", a)
		}
	}
	last := -1
	for _, st := range a {
		i := slices.Index(want, st)
		if i <= last {
			t.Fatalf("rows of a out of order: %v", a)
		}
		last = i
	}
	cancel()
	for range f.C() { // closed once ctx ends
	}
}

func TestTarget(t *testing.T) {
	t.Parallel()
	rows := []stages.Row{
		{Kind: stages.KindDeployment, Name: "web"},
		{Kind: stages.KindReplicaSet, Name: "web-7d9f", Owner: "Deployment/web"},
		{Kind: stages.KindPod, Name: "web-7d9f-x2", Owner: "ReplicaSet/web-7d9f"},
		{Kind: stages.KindDeployment, Name: "webhook"},
		{Kind: stages.KindReplicaSet, Name: "webhook-5c", Owner: "Deployment/webhook"},
		{Kind: stages.KindPod, Name: "webhook-5c-a1", Owner: "ReplicaSet/webhook-5c"},
		{Kind: stages.KindPod, Name: "web"},
	}
	for _, tc := range []struct {
		kind, name string
		want       []int
	}{
		{"", "", []int{0, 1, 2, 3, 4, 5, 6}},
		{stages.KindDeployment, "web", []int{0, 1, 2}},
		{stages.KindPod, "web", []int{6}},
	} {
		want := Target(tc.kind, tc.name)
		var got []int
		for i, r := range rows {
			if want(r) {
				got = append(got, i)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Target(%q, %q) picks %v, want %v", tc.kind, tc.name, got, tc.want)
		}
	}
}
