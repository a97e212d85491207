package trace

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/podtrace/podtrace/stages"
)

// pause holds every gate while it is on: the UI's pause key. Stages that
// already passed their gate run on; the next one of every pod waits.
type pause struct {
	on      atomic.Bool   // read without mu on every gate and Armed
	mu      sync.Mutex    // guards resumed and changes of on
	resumed chan struct{} // closed at Resume
}

// Pause holds every stage at its gate (admission, scheduling, the CRI
// calls, ...) until Resume: the components themselves keep running, on
// their own timers, as they would while a stage is slow.
func (t *Tracer) Pause() {
	t.paused.mu.Lock()
	defer t.paused.mu.Unlock()
	if !t.paused.on.Load() {
		t.paused.resumed = make(chan struct{})
		t.paused.on.Store(true)
	}
}

// Resume lets every stage held by Pause go on.
func (t *Tracer) Resume() {
	t.paused.mu.Lock()
	defer t.paused.mu.Unlock()
	if t.paused.on.Load() {
		t.paused.on.Store(false)
		close(t.paused.resumed)
	}
}

// Paused reports whether the gates are paused.
func (t *Tracer) Paused() bool {
	return t != nil && t.paused.on.Load()
}

// waitResumed holds the stage, shown as waiting, while the gates are paused.
func (t *Tracer) waitResumed(ctx context.Context, ref Ref, stage stages.ID, component string) error {
	if !t.paused.on.Load() {
		return nil
	}
	t.paused.mu.Lock()
	on, resumed := t.paused.on.Load(), t.paused.resumed
	t.paused.mu.Unlock()
	if !on {
		return nil
	}
	t.Begin(ref, stage, component).Wait("Paused", fmt.Sprintf("held before %s: podtrace is paused (space resumes)", stage))
	select {
	case <-resumed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
