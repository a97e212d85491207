package controllerutil

import (
	"context"
	"errors"
	"sort"
	"testing"
	"time"

	apps "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

func TestQueueReportsFailuresAsRetrying(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var events []stages.Event
	q := NewQueue(QueueConfig{Name: "test", Component: "test-controller", Clock: clk,
		Tracer:      trace.New(clk, stages.EmitterFunc(func(e stages.Event) { events = append(events, e) })),
		RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, time.Minute)})
	defer q.ShutDown()
	ref := trace.Ref{Kind: stages.KindReplicaSet, Namespace: "ns", Name: "web"}
	tests := []struct {
		name    string
		err     error
		attempt int           // Attempt during the sync
		next    time.Duration // NextTry of the retrying event after now; 0: no event
	}{
		{"first failure", errors.New("boom"), 1, time.Second},
		{"second failure backs off", errors.New("boom"), 2, 2 * time.Second},
		{"success forgets the key", nil, 3, 0},
		{"a new failure starts again", errors.New("boom"), 1, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events = nil
			q.Add("ns/web")
			var attempt int
			ok := q.processNextWorkItem(context.Background(), func(_ context.Context, key string) error {
				attempt = q.Attempt(key)
				q.AddFailure(key, Failure{Ref: ref, Start: clk.Now(), Reason: "FailedCreate", Message: "m", Attempt: attempt})
				return tt.err
			})
			if !ok || attempt != tt.attempt {
				t.Fatalf("processed %v, attempt %d; want true, %d", ok, attempt, tt.attempt)
			}
			if tt.next == 0 {
				if len(events) != 0 || q.Len() != 0 {
					t.Fatalf("events %v, queue length %d; want none", events, q.Len())
				}
				return
			}
			if len(events) != 2 {
				t.Fatalf("events %v; want started and retrying", events)
			}
			e := events[1]
			want := clk.Now().Add(tt.next)
			if e.Status != stages.Retrying || e.Stage != stages.Reconcile || e.Component != "test-controller" ||
				e.Reason != "FailedCreate" || e.Attempt != tt.attempt || e.NextTry == nil || !e.NextTry.Equal(want) {
				t.Fatalf("event %+v; want retrying FailedCreate attempt %d next try %v", e, tt.attempt, want)
			}
			clk.Step(tt.next)                           // the key comes back once its back-off has passed
			for i := 0; i < 5000 && q.Len() == 0; i++ { // the delaying queue moves it on its own goroutine
				time.Sleep(time.Millisecond)
			}
			if q.Len() != 1 {
				t.Fatalf("queue length %d after the back-off; want 1", q.Len())
			}
			key, _ := q.Get() // taken back out: the next case adds it again
			q.Done(key)
		})
	}
}

func TestQueueStopsWhenShutDown(t *testing.T) {
	q := NewQueue(QueueConfig{Name: "test"})
	q.ShutDown()
	if q.processNextWorkItem(context.Background(), func(context.Context, string) error { return nil }) {
		t.Fatal("processed an item after shutdown")
	}
	if q.HasSynced() {
		t.Fatal("synced before Start")
	}
}

func TestUnwrapAndKeyOf(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	for _, obj := range []interface{}{pod, cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: pod}} {
		got, ok := Unwrap(obj).(*v1.Pod)
		if !ok || KeyOf(got) != "ns/p" {
			t.Fatalf("Unwrap(%T) = %v", obj, got)
		}
	}
}

func TestEnqueueSelecting(t *testing.T) {
	rs := func(name string, sel *metav1.LabelSelector) *apps.ReplicaSet {
		return &apps.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: apps.ReplicaSetSpec{Selector: sel}}
	}
	owners := []*apps.ReplicaSet{
		rs("match", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}),
		rs("other", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}),
		rs("empty", &metav1.LabelSelector{}),
		rs("invalid", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}}),
	}
	tests := []struct {
		name    string
		listErr error
		want    []string
	}{
		{"selecting owners only", nil, []string{"ns/match"}},
		{"list error", errors.New("boom"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := NewQueue(QueueConfig{Name: "test"})
			defer q.ShutDown()
			list := func(labels.Selector) ([]*apps.ReplicaSet, error) { return owners, tt.listErr }
			EnqueueSelecting(q, list, func(rs *apps.ReplicaSet) *metav1.LabelSelector { return rs.Spec.Selector },
				map[string]string{"app": "web"})
			var got []string
			for q.Len() > 0 {
				key, _ := q.Get()
				got = append(got, key)
				q.Done(key)
			}
			sort.Strings(got)
			if len(got) != len(tt.want) || (len(got) > 0 && got[0] != tt.want[0]) {
				t.Fatalf("enqueued %v; want %v", got, tt.want)
			}
		})
	}
}

func TestResolveControllerRef(t *testing.T) {
	kind := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"}
	stored := &apps.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u1"}}
	get := func(name string) (*apps.ReplicaSet, error) {
		if name != stored.Name {
			return nil, apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "replicasets"}, name)
		}
		return stored, nil
	}
	ref := func(kind, name string, uid types.UID) *metav1.OwnerReference {
		return &metav1.OwnerReference{Kind: kind, Name: name, UID: uid}
	}
	tests := []struct {
		name string
		ref  *metav1.OwnerReference
		want bool
	}{
		{"same object", ref("ReplicaSet", "web", "u1"), true},
		{"no reference", nil, false},
		{"other kind", ref("Deployment", "web", "u1"), false},
		{"gone", ref("ReplicaSet", "api", "u1"), false},
		{"recreated under the name", ref("ReplicaSet", "web", "u2"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ResolveControllerRef(tt.ref, kind.Kind, get)
			if (got != nil) != tt.want {
				t.Fatalf("ResolveControllerRef = %v; want found %v", got, tt.want)
			}
		})
	}
}
