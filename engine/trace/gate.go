package trace

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/podtrace/podtrace/stages"
)

// Faults is the set of active faults. It is safe for concurrent use.
type Faults struct {
	mu       sync.Mutex
	next     int
	active   []stages.Fault
	changed  chan struct{} // closed and replaced on every change
	delaying int           // stages waiting out a delay fault
	skip     chan struct{} // closed and replaced by SkipDelays
}

// NewFaults returns an empty fault set.
func NewFaults() *Faults { return &Faults{changed: make(chan struct{}), skip: make(chan struct{})} }

// SkipDelays ends every delay fault's wait now in progress, as if its
// delay had elapsed, and returns how many it ended: the fast-forward key.
func (fs *Faults) SkipDelays() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n := fs.delaying
	if n > 0 {
		close(fs.skip)
		fs.skip = make(chan struct{})
	}
	return n
}

// delay counts a stage in as waiting out a delay until the returned done
// is called; SkipDelays closes skip.
func (fs *Faults) delay() (skip <-chan struct{}, done func()) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.delaying++
	return fs.skip, func() {
		fs.mu.Lock()
		fs.delaying--
		fs.mu.Unlock()
	}
}

// Add activates f and returns it with its ID set.
func (fs *Faults) Add(f stages.Fault) stages.Fault {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.next++
	f.ID = fs.next
	fs.active = append(fs.active, f)
	fs.notifyLocked()
	return f
}

// Remove deactivates the fault with the given ID; it reports whether one was removed.
func (fs *Faults) Remove(id int) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for i, f := range fs.active {
		if f.ID == id {
			fs.active = append(fs.active[:i], fs.active[i+1:]...)
			fs.notifyLocked()
			return true
		}
	}
	return false
}

// List returns the active faults in the order they were added.
func (fs *Faults) List() []stages.Fault {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return append([]stages.Fault(nil), fs.active...)
}

// Changed returns a channel closed at the next change to the set.
func (fs *Faults) Changed() <-chan struct{} {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.changed
}

func (fs *Faults) notifyLocked() {
	close(fs.changed)
	fs.changed = make(chan struct{})
}

// take returns the first fault that applies to the stage for ref, consuming
// one attempt of a flake fault.
func (fs *Faults) take(stage stages.ID, ref Ref) (stages.Fault, bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for i, f := range fs.active {
		if f.Stage != stage || !f.Scope.Matches(ref.Key(), ref.Node) {
			continue
		}
		if f.Kind == stages.Flake {
			fs.active[i].Count--
			if fs.active[i].Count <= 0 {
				fs.active = append(fs.active[:i], fs.active[i+1:]...)
				fs.notifyLocked()
			}
		}
		return f, true
	}
	return stages.Fault{}, false
}

func (fs *Faults) has(id int) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, f := range fs.active {
		if f.ID == id {
			return true
		}
	}
	return false
}

// Fault returns the fail or flake fault that applies to the stage for ref,
// consuming one attempt of a flake, without holding at breakpoints or
// applying delays: for checks the component repeats on its own schedule,
// such as probes, which must answer at once.
func (t *Tracer) Fault(ref Ref, stage stages.ID) *stages.Fault {
	if t == nil {
		return nil
	}
	f, ok := t.Faults.take(stage, ref)
	if !ok || (f.Kind != stages.Fail && f.Kind != stages.Flake) {
		return nil
	}
	return &f
}

// ActiveFaults returns the active faults (none for a nil Tracer).
func (t *Tracer) ActiveFaults() []stages.Fault {
	if t == nil {
		return nil
	}
	return t.Faults.List()
}

// Armed reports whether any fault, breakpoint or the pause could affect a
// stage, so hot paths can skip the work of naming the object when nothing
// is set.
func (t *Tracer) Armed() bool {
	if t == nil {
		return false
	}
	if t.Paused() {
		return true
	}
	t.Faults.mu.Lock()
	n := len(t.Faults.active)
	t.Faults.mu.Unlock()
	t.Breaks.mu.Lock()
	n += len(t.Breaks.points) + len(t.Breaks.stepping)
	t.Breaks.mu.Unlock()
	return n > 0
}

// Gate runs before a stage's work. It holds the stage only for what the
// user set: while the gates are paused, at a breakpoint until the user
// steps or continues, and for a delay or hang fault, which it applies
// itself. It never waits for another component's stage (readers order the
// events: see Hub). It returns the fail or flake fault the caller must turn
// into the stage's realistic error (nil when the stage should proceed).
// The error is ctx's when the wait was cancelled.
func (t *Tracer) Gate(ctx context.Context, ref Ref, stage stages.ID, component string) (*stages.Fault, error) {
	if t == nil {
		return nil, nil
	}
	if err := t.waitResumed(ctx, ref, stage, component); err != nil {
		return nil, err
	}
	if err := t.Breaks.wait(ctx, t, ref, stage, component); err != nil {
		return nil, err
	}
	for {
		f, ok := t.Faults.take(stage, ref)
		if !ok {
			return nil, nil
		}
		switch f.Kind {
		case stages.Delay:
			// Shown while it lasts, as a hang is: the lane counts up.
			// Removing the fault or SkipDelays ends the delay early.
			t.Begin(ref, stage, component).Wait("Delay", fmt.Sprintf("stage %s delayed %s (fault %d: %s)", stage, f.Delay, f.ID, f))
			return nil, t.waitDelay(ctx, f)
		case stages.Hang:
			span := t.Begin(ref, stage, component)
			span.Wait("Hang", fmt.Sprintf("stage %s hangs (fault %d: %s)", stage, f.ID, f))
			for t.Faults.has(f.ID) {
				select {
				case <-t.Faults.Changed():
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			continue // the hang was released: look again
		default:
			return &f, nil
		}
	}
}

// waitDelay waits out f's delay, until f is removed, or until SkipDelays.
func (t *Tracer) waitDelay(ctx context.Context, f stages.Fault) error {
	skip, done := t.Faults.delay()
	defer done()
	timer := t.clock.NewTimer(f.Delay)
	defer timer.Stop()
	for t.Faults.has(f.ID) {
		select {
		case <-timer.C():
			return nil
		case <-skip:
			return nil
		case <-t.Faults.Changed():
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// held is a pod waiting at a breakpoint, and how it is released.
type held struct {
	stages.Held
	step chan bool // true: step (hold before the next stage), false: continue
}

// Breakpoints holds pods before chosen stages. It is safe for concurrent use.
type Breakpoints struct {
	mu       sync.Mutex
	points   []stages.Breakpoint
	held     map[string]*held
	stepping map[string]bool
	changed  chan struct{}
}

// NewBreakpoints returns an empty set.
func NewBreakpoints() *Breakpoints {
	return &Breakpoints{held: map[string]*held{}, stepping: map[string]bool{}, changed: make(chan struct{})}
}

// Set adds a breakpoint.
func (b *Breakpoints) Set(bp stages.Breakpoint) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.points = append(b.points, bp)
	b.notifyLocked()
}

// Clear removes every breakpoint at stage (all stages when stage is empty).
func (b *Breakpoints) Clear(stage stages.ID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	kept := b.points[:0]
	for _, p := range b.points {
		if stage != "" && p.Stage != stage {
			kept = append(kept, p)
		}
	}
	b.points = kept
	b.notifyLocked()
}

// Remove removes the breakpoint equal to bp, if set.
func (b *Breakpoints) Remove(bp stages.Breakpoint) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, p := range b.points {
		if p == bp {
			b.points = append(b.points[:i], b.points[i+1:]...)
			b.notifyLocked()
			return
		}
	}
}

// List returns the breakpoints.
func (b *Breakpoints) List() []stages.Breakpoint {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]stages.Breakpoint(nil), b.points...)
}

// Held returns the pods waiting at a breakpoint, sorted by pod.
func (b *Breakpoints) Held() []stages.Held {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]stages.Held, 0, len(b.held))
	for _, h := range b.held {
		out = append(out, h.Held)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pod < out[j].Pod })
	return out
}

// Changed returns a channel closed at the next change (a pod held or released).
func (b *Breakpoints) Changed() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.changed
}

// Step lets the held pod run its stage and holds it again before the next one.
func (b *Breakpoints) Step(pod string) bool { return b.release(pod, true) }

// Continue lets the held pod run on until the next breakpoint.
func (b *Breakpoints) Continue(pod string) bool { return b.release(pod, false) }

// ContinueAll releases every held pod.
func (b *Breakpoints) ContinueAll() {
	for _, h := range b.Held() {
		b.Continue(h.Pod)
	}
}

func (b *Breakpoints) release(pod string, step bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	h, ok := b.held[pod]
	if !ok {
		return false
	}
	delete(b.held, pod)
	b.stepping[pod] = step
	h.step <- step
	b.notifyLocked()
	return true
}

func (b *Breakpoints) notifyLocked() {
	close(b.changed)
	b.changed = make(chan struct{})
}

func (b *Breakpoints) wait(ctx context.Context, t *Tracer, ref Ref, stage stages.ID, component string) error {
	key := ref.Key()
	b.mu.Lock()
	hit := b.stepping[key]
	for _, p := range b.points {
		if p.Stage == stage && p.Scope.Matches(key, ref.Node) {
			hit = true
		}
	}
	if !hit {
		b.mu.Unlock()
		return nil
	}
	delete(b.stepping, key)
	h := &held{Held: stages.Held{Pod: key, Stage: stage}, step: make(chan bool, 1)}
	b.held[key] = h
	b.notifyLocked()
	b.mu.Unlock()

	span := t.Begin(ref, stage, component)
	span.Wait("Breakpoint", fmt.Sprintf("held before %s: press n to step, c to continue", stage))
	select {
	case <-h.step:
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		if b.held[key] == h {
			delete(b.held, key)
			b.notifyLocked()
		}
		b.mu.Unlock()
		return ctx.Err()
	}
}
