package replicaset

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apps "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

// recorder collects stage events.
type recorder struct {
	mu     sync.Mutex
	events []stages.Event
}

func (r *recorder) Emit(e stages.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) terminal(stage stages.ID) []stages.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []stages.Event
	for _, e := range r.events {
		if e.Stage == stage && e.Status != stages.Started {
			out = append(out, e)
		}
	}
	return out
}

// newFakeClient returns a fake clientset that fills in generateName like the API server.
func newFakeClient(objs ...runtime.Object) *fake.Clientset {
	c := fake.NewClientset(objs...)
	var n atomic.Int32
	c.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pod := a.(k8stesting.CreateAction).GetObject().(*v1.Pod)
		if pod.Name == "" {
			pod.Name = fmt.Sprintf("%s%05d", pod.GenerateName, n.Add(1))
			pod.UID = k8stypes.UID("uid-" + pod.Name)
		}
		return false, nil, nil
	})
	return c
}

func testRS(replicas int32) *apps.ReplicaSet {
	return &apps.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-abc", Namespace: "default", UID: "rs-uid", Generation: 1},
		Spec: apps.ReplicaSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: v1.PodSpec{Containers: []v1.Container{{Name: "web", Image: "nginx"}}}},
		},
	}
}

func startController(t *testing.T, client *fake.Clientset, tr *trace.Tracer) *Controller {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c, err := New(Config{Client: client, Clock: clock.RealClock{}, Tracer: tr,
		RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, 50*time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

func eventually(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if f() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

func listPods(t *testing.T, client *fake.Clientset) []v1.Pod {
	l, err := client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func eventMessages(t *testing.T, client *fake.Clientset, reason string) []string {
	l, err := client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range l.Items {
		if e.Reason == reason {
			if e.Source.Component != Component || e.InvolvedObject.Kind != "ReplicaSet" || e.InvolvedObject.Name != "web-abc" {
				t.Errorf("event %s: source %q about %s/%s", reason, e.Source.Component, e.InvolvedObject.Kind, e.InvolvedObject.Name)
			}
			out = append(out, e.Message)
		}
	}
	sort.Strings(out)
	return out
}

func TestCreatesPodsWithOwnerAndEvents(t *testing.T) {
	client := newFakeClient(testRS(3))
	rec := &recorder{}
	startController(t, client, trace.New(clock.RealClock{}, rec))
	eventually(t, "3 pods", func() bool { return len(listPods(t, client)) == 3 })
	for _, p := range listPods(t, client) {
		ref := metav1.GetControllerOf(&p)
		if ref == nil || ref.Kind != "ReplicaSet" || ref.Name != "web-abc" || ref.UID != "rs-uid" || !*ref.BlockOwnerDeletion {
			t.Fatalf("pod %s controller ref = %+v", p.Name, ref)
		}
		if p.GenerateName != "web-abc-" || p.Labels["app"] != "web" {
			t.Fatalf("pod %s: generateName %q labels %v", p.Name, p.GenerateName, p.Labels)
		}
	}
	eventually(t, "3 SuccessfulCreate events", func() bool { return len(eventMessages(t, client, "SuccessfulCreate")) == 3 })
	if msgs := eventMessages(t, client, "SuccessfulCreate"); msgs[0] != "Created pod: web-abc-00001" {
		t.Fatalf("messages = %q", msgs)
	}
	evs := rec.terminal(stages.Reconcile)
	if len(evs) != 3 {
		t.Fatalf("reconcile events = %+v", evs)
	}
	for _, e := range evs {
		if e.Kind != stages.KindPod || e.Status != stages.Succeeded || e.Reason != "SuccessfulCreate" ||
			e.Message != "Created pod: "+e.Pod || e.Component != Component || e.Namespace != "default" {
			t.Fatalf("reconcile event = %+v", e)
		}
	}
	eventually(t, "status replicas 3", func() bool {
		rs, _ := client.AppsV1().ReplicaSets("default").Get(context.Background(), "web-abc", metav1.GetOptions{})
		return rs.Status.Replicas == 3 && rs.Status.FullyLabeledReplicas == 3 && rs.Status.ObservedGeneration == 1
	})
}

func TestScalesDownUnreadyFirst(t *testing.T) {
	rs := testRS(1)
	ref := metav1.NewControllerRef(rs, controllerKind)
	pod := func(name string, ready bool) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: k8stypes.UID("u-" + name), Labels: map[string]string{"app": "web"},
			OwnerReferences: []metav1.OwnerReference{*ref}}, Spec: v1.PodSpec{NodeName: "n1"}, Status: v1.PodStatus{Phase: v1.PodRunning}}
		if ready {
			p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
		}
		return p
	}
	client := newFakeClient(rs, pod("ready", true), pod("unready-1", false), pod("unready-2", false))
	startController(t, client, nil)
	eventually(t, "one pod left", func() bool { return len(listPods(t, client)) == 1 })
	if p := listPods(t, client)[0]; p.Name != "ready" {
		t.Fatalf("kept %s, want the ready pod", p.Name)
	}
	eventually(t, "SuccessfulDelete events", func() bool { return len(eventMessages(t, client, "SuccessfulDelete")) == 2 })
	if got := eventMessages(t, client, "SuccessfulDelete"); got[0] != "Deleted pod: unready-1" || got[1] != "Deleted pod: unready-2" {
		t.Fatalf("SuccessfulDelete = %q", got)
	}
}

func TestForbiddenCreateRetriesWithFailedCreate(t *testing.T) {
	client := newFakeClient(testRS(2))
	var denied atomic.Int32
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if denied.Add(1) <= 3 {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "",
				fmt.Errorf(`User %q cannot create resource "pods" in API group "" in the namespace "default"`, DefaultUser))
		}
		return false, nil, nil
	})
	rec := &recorder{}
	startController(t, client, trace.New(clock.RealClock{}, rec))
	eventually(t, "2 pods after RBAC comes back", func() bool { return len(listPods(t, client)) == 2 })
	want := `Error creating: pods is forbidden: User "system:serviceaccount:kube-system:replicaset-controller" cannot create resource "pods" in API group "" in the namespace "default"`
	eventually(t, "FailedCreate event", func() bool {
		m := eventMessages(t, client, "FailedCreate")
		return len(m) > 0 && m[0] == want
	})
	var retries []stages.Event
	for _, e := range rec.terminal(stages.Reconcile) {
		if e.Status == stages.Retrying {
			retries = append(retries, e)
		}
	}
	if len(retries) != 3 {
		t.Fatalf("retrying events = %d, want 3 (one per denied create)", len(retries))
	}
	for i, e := range retries {
		if e.Kind != stages.KindReplicaSet || e.Pod != "web-abc" || e.Reason != "FailedCreate" || e.Message != want || e.NextTry == nil || e.Attempt != i+1 {
			t.Fatalf("retry %d = %+v", i, e)
		}
	}
}

func TestReconcileFaultFailsCreate(t *testing.T) {
	client := newFakeClient(testRS(1))
	rec := &recorder{}
	tr := trace.New(clock.RealClock{}, rec)
	f := tr.Faults.Add(stages.Fault{Stage: stages.Reconcile, Kind: stages.Flake, Count: 2, Variant: "quota"})
	startController(t, client, tr)
	eventually(t, "pod after the flake", func() bool { return len(listPods(t, client)) == 1 })
	if tr.Faults.Remove(f.ID) {
		t.Fatal("flake fault not consumed")
	}
	// The controller reports the create's success just after it returns.
	eventually(t, "the successful reconcile reported", func() bool { return len(rec.terminal(stages.Reconcile)) >= 3 })
	evs := rec.terminal(stages.Reconcile)
	if len(evs) != 3 || evs[0].Status != stages.Retrying || evs[1].Status != stages.Retrying || evs[2].Status != stages.Succeeded {
		t.Fatalf("reconcile events = %+v", evs)
	}
	if !strings.Contains(evs[0].Message, "exceeded quota") || evs[2].Attempt != 3 {
		t.Fatalf("events = %+v", evs)
	}
}
