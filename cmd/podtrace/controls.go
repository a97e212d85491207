package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
	"github.com/podtrace/podtrace/tui"
)

// faultControl lets the UI inject faults and drive breakpoints.
type faultControl struct{ t *trace.Tracer }

// Variants lists the stage's realistic failures from the catalogue, the
// default first.
func (f faultControl) Variants(stage stages.ID) []tui.Variant {
	var out []tui.Variant
	for _, v := range stages.Variants(stage) {
		out = append(out, tui.Variant{Name: v.Name, Description: v.Description})
	}
	return out
}

// Add injects fault, after turning a variant that stands for a slow or down
// component into its delay or hang.
func (f faultControl) Add(fault stages.Fault) (stages.Fault, error) {
	fault, err := stages.ResolveVariant(fault)
	if err != nil {
		return stages.Fault{}, err
	}
	return f.t.Faults.Add(fault), nil
}

func (f faultControl) Remove(id int) error {
	if !f.t.Faults.Remove(id) {
		return fmt.Errorf("no fault %d", id)
	}
	return nil
}

func (f faultControl) List() []stages.Fault { return f.t.Faults.List() }

func (f faultControl) SetBreakpoint(bp tui.Breakpoint) error {
	f.t.Breaks.Set(trace.Breakpoint{Stage: bp.Stage, Scope: bp.Scope})
	return nil
}

func (f faultControl) ClearBreakpoint(bp tui.Breakpoint) error {
	f.t.Breaks.Remove(trace.Breakpoint{Stage: bp.Stage, Scope: bp.Scope})
	return nil
}

func (f faultControl) Breakpoints() []tui.Breakpoint {
	var out []tui.Breakpoint
	for _, bp := range f.t.Breaks.List() {
		out = append(out, tui.Breakpoint{Stage: bp.Stage, Scope: bp.Scope})
	}
	return out
}

func (f faultControl) Held() []tui.Held {
	var out []tui.Held
	for _, h := range f.t.Breaks.Held() {
		out = append(out, tui.Held{Pod: h.Pod, Stage: h.Stage})
	}
	return out
}

func (f faultControl) Step(pod string) error { return release(pod, f.t.Breaks.Step, f.t) }

func (f faultControl) Continue(pod string) error {
	if pod == "" {
		f.t.Breaks.ContinueAll()
		return nil
	}
	return release(pod, f.t.Breaks.Continue, f.t)
}

func release(pod string, do func(string) bool, t *trace.Tracer) error {
	if !do(pod) {
		return fmt.Errorf("pod %s is not held at a breakpoint", pod)
	}
	return nil
}

// clockControl lets the UI pause, speed up and fast-forward the engine clock.
type clockControl struct{ e *engine.Engine }

// Paused reports whether the clock is paused. The UI asks from its first
// frame on, which is when the retry tracker starts listening.
func (c clockControl) Paused() bool {
	retriesOf(c.e)
	return c.e.Clock.Paused()
}

func (c clockControl) Speed() float64 { return c.e.Clock.Speed() }

func (c clockControl) SetPaused(paused bool) error {
	if paused {
		c.e.Clock.Pause()
	} else {
		c.e.Clock.Resume()
	}
	return nil
}

func (c clockControl) SetSpeed(speed float64) error { return c.e.Clock.SetSpeed(speed) }

// FastForward runs the pending retries now: kube-scheduler's (every pod
// waiting in its unschedulable or back-off queue is activated, as a
// cluster event would), and on the engine clock the next one: the earliest
// labelled wait, else the earliest NextTry a retrying stage event announced
// (an image pull or crash back-off), else the next timer. It returns how far
// the engine clock jumped (0 when only the scheduler retried).
func (c clockControl) FastForward() (time.Duration, error) {
	activated := 0
	if c.e.Scheduler != nil {
		activated = c.e.Scheduler.ActivatePending(context.Background())
	}
	if _, d, ok := c.e.Clock.FastForwardWait(); ok {
		return d, nil
	}
	if next, ok := retriesOf(c.e).earliest(c.e.Clock.Now()); ok {
		d := next.Sub(c.e.Clock.Now())
		if err := c.e.Clock.Advance(d); err != nil {
			return 0, err
		}
		return d, nil
	}
	if d, ok := c.e.Clock.FastForward(); ok {
		return d, nil
	}
	if activated > 0 {
		return 0, nil
	}
	if len(c.e.Nodes) > 0 {
		return 0, fmt.Errorf("nothing to fast-forward: the real kubelet's back-offs run on real time")
	}
	return 0, fmt.Errorf("nothing is waiting on the clock")
}

// retryTracker remembers, per object, stage and container, when the last
// retrying stage event said the stage will be tried again.
type retryTracker struct {
	mu   sync.Mutex
	next map[string]time.Time
}

var (
	trackersMu sync.Mutex
	trackers   = map[*engine.Engine]*retryTracker{}
)

// retriesOf returns the engine's tracker, subscribing it to the engine's
// events on first use (it lives as long as the engine's hub).
func retriesOf(e *engine.Engine) *retryTracker {
	trackersMu.Lock()
	defer trackersMu.Unlock()
	if r, ok := trackers[e]; ok {
		return r
	}
	r := &retryTracker{next: map[string]time.Time{}}
	trackers[e] = r
	sub := e.Hub.Subscribe()
	go func() {
		for ev := range sub.C() {
			r.observe(ev)
		}
	}()
	return r
}

func (r *retryTracker) observe(ev stages.Event) {
	key := ev.Kind + "/" + ev.Key() + "/" + string(ev.Stage) + "/" + ev.Container
	r.mu.Lock()
	defer r.mu.Unlock()
	if ev.Status == stages.Retrying && ev.NextTry != nil {
		r.next[key] = *ev.NextTry
	} else if ev.Status != stages.Started {
		delete(r.next, key)
	}
}

// earliest returns the first announced retry after now.
func (r *retryTracker) earliest(now time.Time) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var first time.Time
	for key, t := range r.next {
		if !t.After(now) {
			delete(r.next, key) // due: the component is on it
			continue
		}
		if first.IsZero() || t.Before(first) {
			first = t
		}
	}
	return first, !first.IsZero()
}
