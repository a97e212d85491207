package queue

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func pod(name string, prio int32) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name)}, Spec: v1.PodSpec{Priority: &prio}}
}

func pop(t *testing.T, q *Queue) *QueuedPodInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	pi := q.Pop(ctx)
	if pi == nil {
		t.Fatal("Pop: nothing active")
	}
	return pi
}

func TestBackoffDurationDoublesToMax(t *testing.T) {
	q := New(Config{Clock: clocktesting.NewFakeClock(t0)})
	want := []time.Duration{0, 1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	for count, w := range want {
		if got := q.BackoffDuration(count); got != w {
			t.Errorf("BackoffDuration(%d) = %v, want %v", count, got, w)
		}
	}
}

func TestPopOrderPriorityThenArrival(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	q := New(Config{Clock: clk})
	q.Add(pod("low-1", 0))
	clk.Step(time.Millisecond)
	q.Add(pod("high", 100))
	clk.Step(time.Millisecond)
	q.Add(pod("low-2", 0))
	var got []string
	for range 3 {
		got = append(got, pop(t, q).Pod.Name)
	}
	if want := []string{"high", "low-1", "low-2"}; got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("pop order %v, want %v", got, want)
	}
}

// An error (or injected fault) backs off 1 s, then 2 s, 4 s, 8 s, 10 s: the
// pod becomes active only once its back-off has expired on the clock.
func TestErrorBackoffOnFakeClock(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	q := New(Config{Clock: clk})
	q.Add(pod("p", 0))
	for i, d := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second} {
		pi := pop(t, q)
		if pi.Attempts != i+1 {
			t.Fatalf("attempt %d, want %d", pi.Attempts, i+1)
		}
		next := q.AddBackoff(pi)
		if want := clk.Now().Add(d); !next.Equal(want) {
			t.Fatalf("retry %d: next try %v, want %v", i+1, next, want)
		}
		clk.Step(d - time.Millisecond)
		q.FlushBackoffCompleted()
		if w := q.Where("p"); w != Backoff {
			t.Fatalf("retry %d: %v before the back-off ends, want Backoff", i+1, w)
		}
		clk.Step(time.Millisecond)
		q.FlushBackoffCompleted()
		if w := q.Where("p"); w != Active {
			t.Fatalf("retry %d: %v after the back-off, want Active", i+1, w)
		}
	}
}

// An unschedulable pod waits for a cluster event; the event moves it to the
// back-off queue until its back-off has passed.
func TestUnschedulableMovedByClusterEvent(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	q := New(Config{Clock: clk})
	q.Add(pod("p", 0))
	pi := pop(t, q)
	next := q.AddUnschedulable(pi)
	if want := clk.Now().Add(5 * time.Minute); !next.Equal(want) {
		t.Errorf("unschedulable next try %v, want the 5-minute flush %v", next, want)
	}
	if w := q.Where("p"); w != Unschedulable {
		t.Fatalf("after failure: %v, want Unschedulable", w)
	}
	clk.Step(time.Minute)
	q.FlushBackoffCompleted()
	q.FlushUnschedulableLeftover()
	if w := q.Where("p"); w != Unschedulable {
		t.Fatalf("with no event: %v, want Unschedulable", w)
	}
	q.MoveAllToActiveOrBackoff() // backed off 1 s a minute ago: straight to active
	if w := q.Where("p"); w != Active {
		t.Fatalf("after node added: %v, want Active", w)
	}
	pi = pop(t, q)
	q.AddUnschedulable(pi) // second failure: 2 s back-off
	q.MoveAllToActiveOrBackoff()
	if w := q.Where("p"); w != Backoff {
		t.Fatalf("event right after failure: %v, want Backoff", w)
	}
	clk.Step(2 * time.Second)
	q.FlushBackoffCompleted()
	if w := q.Where("p"); w != Active {
		t.Fatalf("after 2 s: %v, want Active", w)
	}
}

func TestUnschedulableFlushedAfterFiveMinutes(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	q := New(Config{Clock: clk})
	q.Add(pod("p", 0))
	q.AddUnschedulable(pop(t, q))
	clk.Step(5*time.Minute - time.Second)
	q.FlushUnschedulableLeftover()
	if w := q.Where("p"); w != Unschedulable {
		t.Fatalf("before 5 min: %v", w)
	}
	clk.Step(time.Second)
	q.FlushUnschedulableLeftover()
	if w := q.Where("p"); w != Active {
		t.Fatalf("after 5 min: %v, want Active", w)
	}
}

// A cluster event during the attempt must not be lost: the pod skips the
// unschedulable set.
func TestEventDuringAttemptRequeues(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	q := New(Config{Clock: clk})
	q.Add(pod("p", 0))
	pi := pop(t, q)
	q.MoveAllToActiveOrBackoff() // e.g. a node was added while filtering
	q.AddUnschedulable(pi)
	if w := q.Where("p"); w != Backoff {
		t.Fatalf("got %v, want Backoff", w)
	}
}

func TestRunFlushesOnClockTicks(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	q := New(Config{Clock: clk})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go q.Run(ctx)
	q.Add(pod("p", 0))
	q.AddBackoff(pop(t, q))
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(time.Second)
	deadline := time.Now().Add(2 * time.Second)
	for q.Where("p") != Active {
		if time.Now().After(deadline) {
			t.Fatalf("still %v after the 1 s tick", q.Where("p"))
		}
		time.Sleep(time.Millisecond)
	}
}

func TestUpdateStatusOnlyKeepsPodUnschedulable(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	q := New(Config{Clock: clk})
	p := pod("p", 0)
	q.Add(p)
	q.AddUnschedulable(pop(t, q))
	withCond := p.DeepCopy()
	withCond.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse}}
	q.Update(p, withCond)
	if w := q.Where("p"); w != Unschedulable {
		t.Fatalf("status-only update: %v, want Unschedulable", w)
	}
	relabelled := withCond.DeepCopy()
	relabelled.Labels = map[string]string{"a": "b"}
	clk.Step(time.Minute)
	q.Update(withCond, relabelled)
	if w := q.Where("p"); w != Active {
		t.Fatalf("spec/metadata update: %v, want Active", w)
	}
	q.Delete(relabelled)
	if w := q.Where("p"); w != "" {
		t.Fatalf("after delete: %v", w)
	}
}
