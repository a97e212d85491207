package clock

import (
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// TestDrivesClientGoWorkqueue checks the clock as client-go's delaying
// queue uses it: an item added with a 5-minute delay (a controller's
// back-off) stays out of the queue until virtual time gets there.
func TestDrivesClientGoWorkqueue(t *testing.T) {
	c, _ := paused()
	q := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{Clock: c})
	defer q.ShutDown()

	q.AddAfter("default/web", 5*time.Minute)
	time.Sleep(20 * time.Millisecond)
	if n := q.Len(); n != 0 {
		t.Fatalf("queue length %d before the delay passed, want 0", n)
	}
	_ = c.Advance(4 * time.Minute)
	time.Sleep(20 * time.Millisecond)
	if n := q.Len(); n != 0 {
		t.Fatalf("queue length %d after 4 of 5 minutes, want 0", n)
	}
	_ = c.Advance(time.Minute)
	got := make(chan string, 1)
	go func() {
		item, _ := q.Get()
		got <- item
	}()
	select {
	case item := <-got:
		if item != "default/web" {
			t.Errorf("Get() = %q, want default/web", item)
		}
		q.Done(item)
	case <-time.After(5 * time.Second):
		t.Fatal("item not ready after 5 minutes of virtual time")
	}
}
