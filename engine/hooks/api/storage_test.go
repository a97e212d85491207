package api

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	core "k8s.io/kubernetes/pkg/apis/core"

	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

// decorated returns the storage kube-apiserver would build for gr once
// Install has wrapped its RESTOptionsGetter, over a memStore holding pods.
func decorated(t *testing.T, gr schema.GroupResource, pods ...*core.Pod) (storage.Interface, *events) {
	t.Helper()
	out := &events{}
	mem := &memStore{objs: map[string]*core.Pod{}}
	for _, p := range pods {
		mem.objs[key(p)] = p
	}
	inner := generic.RESTOptions{Decorator: func(*storagebackend.ConfigForResource, string, func(runtime.Object) (string, error),
		func() runtime.Object, func() runtime.Object, storage.AttrFunc, storage.IndexerFuncs, *cache.Indexers,
	) (storage.Interface, factory.DestroyFunc, error) {
		return mem, func() {}, nil
	}}
	getter := &restOptionsHook{inner: inner, h: New(trace.New(clock.RealClock{}, out))}
	o, err := getter.GetRESTOptions(gr, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := o.Decorator(nil, "", nil, nil, nil, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s, out
}

func key(p *core.Pod) string { return "/pods/" + p.Namespace + "/" + p.Name }

// runningPod is a pod on node-1 whose container started 2s ago, with the
// Ready and ContainersReady conditions given (none when ready is "").
func runningPod(ready core.ConditionStatus) *core.Pod {
	p := &core.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web", UID: "uid-web"},
		Spec: core.PodSpec{NodeName: "node-1"}}
	p.Status.ContainerStatuses = []core.ContainerStatus{{Name: "web", State: core.ContainerState{
		Running: &core.ContainerStateRunning{StartedAt: metav1.NewTime(time.Now().Add(-2 * time.Second))}}}}
	if ready != "" {
		c := core.PodCondition{Status: ready}
		if ready == core.ConditionFalse {
			c.Reason, c.Message = "ContainersNotReady", "containers with unready status: [web]"
		}
		c.Type = core.ContainersReady
		p.Status.Conditions = append(p.Status.Conditions, c)
		c.Type = core.PodReady
		p.Status.Conditions = append(p.Status.Conditions, c)
	}
	return p
}

// TestPodStatusUpdatesEndTheReadyStage: the kubelet's status writes end
// the ready stage when Ready turns True, and make it retry with the
// kubelet's reason when Ready falls back to False; other writes report
// nothing.
func TestPodStatusUpdatesEndTheReadyStage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		was, is      core.ConditionStatus
		want         stages.Status // "" for no event
		reason, text string
	}{
		{"ready", core.ConditionFalse, core.ConditionTrue, stages.Succeeded, "", "Ready=True: every container is ready"},
		{"first status ready", "", core.ConditionTrue, stages.Succeeded, "", "Ready=True: every container is ready"},
		{"no longer ready", core.ConditionTrue, core.ConditionFalse, stages.Retrying, "ContainersNotReady",
			"Ready=False: containers with unready status: [web]"},
		{"still ready", core.ConditionTrue, core.ConditionTrue, "", "", ""},
		{"first status not ready", "", core.ConditionFalse, "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, out := decorated(t, schema.GroupResource{Resource: "pods"}, runningPod(tc.was))
			update := func(runtime.Object, storage.ResponseMeta) (runtime.Object, *uint64, error) {
				return runningPod(tc.is), nil, nil
			}
			if err := s.GuaranteedUpdate(context.Background(), "/pods/team/web", &core.Pod{}, false, nil, update, nil); err != nil {
				t.Fatal(err)
			}
			evs := out.all()
			if tc.want == "" {
				if len(evs) != 0 {
					t.Errorf("reported %+v, want nothing", evs)
				}
				return
			}
			if len(evs) == 0 {
				t.Fatal("reported nothing")
			}
			e := evs[len(evs)-1]
			if e.Stage != stages.Ready || e.Status != tc.want || e.Reason != tc.reason || e.Message != tc.text ||
				e.Pod != "web" || e.Node != "node-1" || e.Component != "kubelet" {
				t.Errorf("reported %s %s on %s by %s: %q %q\nwant ready %s on node-1 by kubelet: %q %q",
					e.Stage, e.Status, e.Node, e.Component, e.Reason, e.Message, tc.want, tc.reason, tc.text)
			}
			if tc.want == stages.Succeeded && e.DurationMs < 2000 {
				t.Errorf("ready took %.0fms, want it timed from the container's start 2s ago", e.DurationMs)
			}
		})
	}
}

// TestPodLeavingEtcdEndsTheDeleteStage: the pod's removal from etcd ends
// its delete stage, timed from when its deletion was asked for (5s ago,
// with 30s of grace: kube-apiserver set the deletion timestamp 25s ahead).
func TestPodLeavingEtcdEndsTheDeleteStage(t *testing.T) {
	t.Parallel()
	p := runningPod(core.ConditionTrue)
	grace := int64(30)
	p.DeletionGracePeriodSeconds = &grace
	p.DeletionTimestamp = &metav1.Time{Time: time.Now().Add(25 * time.Second)}
	s, out := decorated(t, schema.GroupResource{Resource: "pods"}, p)
	if err := s.Delete(context.Background(), key(p), &core.Pod{}, nil, nil, nil, storage.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ended := out.ended("web")
	if len(ended) != 1 {
		t.Fatalf("ended %v, want the delete stage", stagesOf(ended))
	}
	e := ended[0]
	if e.Stage != stages.Delete || e.Status != stages.Succeeded || e.Reason != "Deleted" ||
		e.Message != "Pod team/web removed from etcd" || e.Node != "node-1" || e.UID != "uid-web" {
		t.Errorf("ended %s %s on %q (uid %q): %q %q\nwant delete succeeded on node-1 (uid-web): Deleted \"Pod team/web removed from etcd\"",
			e.Stage, e.Status, e.Node, e.UID, e.Reason, e.Message)
	}
	if e.DurationMs < 5000 || e.DurationMs > 6000 {
		t.Errorf("delete took %.0fms, want it timed from the deletion asked 5s ago", e.DurationMs)
	}
}

// TestOnlyTracedResourcesAreDecorated: the storage of a resource podtrace
// does not draw is kube-apiserver's own, untouched.
func TestOnlyTracedResourcesAreDecorated(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		gr   schema.GroupResource
		want bool
	}{
		{schema.GroupResource{Resource: "pods"}, true},
		{schema.GroupResource{Group: "apps", Resource: "deployments"}, true},
		{schema.GroupResource{Resource: "configmaps"}, false},
		{schema.GroupResource{Resource: "events"}, false},
	} {
		s, _ := decorated(t, tc.gr)
		if _, got := s.(*storageHook); got != tc.want {
			t.Errorf("%s decorated: %v, want %v", tc.gr, got, tc.want)
		}
	}
}
