// Package clock is the engine's controllable clock: podtrace's tracer stamps
// stage events with it and waits out delay faults on it, so a workshop can
// fast-forward through a delay. The upstream components (kube-apiserver,
// the controllers, kube-scheduler, the kubelets) run on real time.
//
// Virtual time runs at speed × real time from a start instant. A *Clock
// implements k8s.io/utils/clock's WithTicker and WithDelayedExecution, so it
// can be handed to client-go workqueues, rate limiters and wait helpers.
//
// # Design
//
// Pending timers live in one min-heap ordered by virtual deadline (then by
// creation order), and a single real time.Timer is armed for the earliest
// one: (deadline − virtual now) / speed of real time. The alternative, one
// time.AfterFunc per virtual timer, would need every runtime timer re-armed
// on each speed change or pause (O(n) for 10,000 pods' probes and
// back-offs), and FastForward and NextDeadline would still need an ordered
// index of deadlines. With the heap, a speed change, pause or jump re-arms
// one real timer, FastForward pops the minimum, and no timer costs a
// goroutine while it sleeps. At speed 1 the cost over the standard library
// is one heap insertion and, only when the earliest deadline changes, one
// real timer reset.
//
// Instants returned by Now carry no monotonic reading (they behave like
// wall-clock times read from a file), and Now never goes backwards.
package clock

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	kclock "k8s.io/utils/clock"
)

// Speed limits accepted by New and SetSpeed.
const (
	// MinSpeed is the slowest speed: 1/1024 of real time.
	MinSpeed = 1.0 / 1024
	// MaxSpeed is the fastest speed: about a million times real time.
	MaxSpeed = 1 << 20
)

var (
	_ kclock.WithTicker                    = (*Clock)(nil)
	_ kclock.WithDelayedExecution          = (*Clock)(nil)
	_ kclock.WithTickerAndDelayedExecution = (*Clock)(nil)
)

// Clock is a virtual clock that runs at a settable multiple of real time,
// can be paused, and can jump forward. It is safe for concurrent use. The
// zero value is not usable; call New.
type Clock struct {
	mu sync.Mutex

	// Virtual now is base + (real now − realBase) × speed while running,
	// and base while paused. Every change of speed, pause or jump
	// rebases: base becomes the virtual now, realBase the real now.
	epoch    time.Time // virtual start instant, origin of heap keys
	base     time.Time // virtual, no monotonic reading
	realBase time.Time // real, with monotonic reading
	last     time.Time // latest virtual instant handed out, so Now never goes back
	speed    float64
	paused   bool

	heap    timerHeap
	seq     uint64
	wake    *time.Timer // real timer armed for heap[0]
	armed   bool        // wake is armed for armedAt under the current base
	armedAt time.Time   // virtual deadline wake is armed for

	changed chan struct{} // closed and replaced on every change of state
}

// New returns a running clock that reads start now and advances at speed ×
// real time. New(time.Now(), 1) behaves like the real clock. It panics if
// speed is not within [MinSpeed, MaxSpeed] (see ValidateSpeed).
func New(start time.Time, speed float64) *Clock {
	if err := ValidateSpeed(speed); err != nil {
		panic(fmt.Sprintf("clock.New: %v", err))
	}
	start = start.Round(0)
	c := &Clock{
		epoch:    start,
		base:     start,
		realBase: time.Now(),
		last:     start,
		speed:    speed,
		changed:  make(chan struct{}),
	}
	c.wake = time.AfterFunc(math.MaxInt64, c.onWake)
	c.wake.Stop()
	return c
}

// ValidateSpeed reports whether f can be used as a clock speed: a finite
// number within [MinSpeed, MaxSpeed].
func ValidateSpeed(f float64) error {
	if math.IsNaN(f) || f < MinSpeed || f > MaxSpeed {
		return fmt.Errorf("speed %v out of range [%v, %v]", f, MinSpeed, float64(MaxSpeed))
	}
	return nil
}

// State is a snapshot of the clock for display.
type State struct {
	Now     time.Time // virtual now
	Speed   float64   // multiple of real time
	Paused  bool
	Pending int // timers and tickers waiting to fire
}

// State returns a consistent snapshot of the clock.
func (c *Clock) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return State{Now: c.nowLocked(time.Now()), Speed: c.speed, Paused: c.paused, Pending: len(c.heap)}
}

// Now returns the current virtual time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nowLocked(time.Now())
}

// Since returns the virtual time elapsed since t.
func (c *Clock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// Speed returns the multiple of real time at which virtual time runs.
func (c *Clock) Speed() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.speed
}

// SetSpeed makes virtual time run at f × real time from now on. Pending
// timers keep their virtual deadlines and fire sooner or later in real
// time accordingly. It returns an error, and changes nothing, when f is out
// of range (see ValidateSpeed).
func (c *Clock) SetSpeed(f float64) error {
	if err := ValidateSpeed(f); err != nil {
		return fmt.Errorf("set clock speed: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if f == c.speed {
		return nil
	}
	c.rebaseLocked(time.Now())
	c.speed = f
	c.rescheduleLocked(time.Now())
	c.notifyLocked()
	return nil
}

// Pause stops virtual time: Now stands still and no timer fires (except
// those whose wait is zero or negative) until Resume, Advance or
// FastForward.
func (c *Clock) Pause() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused {
		return
	}
	c.rebaseLocked(time.Now())
	c.paused = true
	c.rescheduleLocked(time.Now())
	c.notifyLocked()
}

// Resume lets virtual time run again from where it was paused.
func (c *Clock) Resume() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.paused {
		return
	}
	c.rebaseLocked(time.Now())
	c.paused = false
	c.rescheduleLocked(time.Now())
	c.notifyLocked()
}

// Paused reports whether virtual time is stopped.
func (c *Clock) Paused() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paused
}

// Changed returns a channel that is closed at the next change of speed,
// pause state, or jump of virtual time (Advance, FastForward). Timers
// firing on their own do not count as changes.
func (c *Clock) Changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

// ErrNegative is returned by Advance for a negative duration: virtual time
// never goes backwards.
var ErrNegative = errors.New("clock cannot go backwards")

// Advance jumps virtual time forward by d and fires every timer that is
// then due, in deadline order. Tickers that missed several periods tick
// once, as the standard library's do for slow receivers.
func (c *Clock) Advance(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("advance clock by %v: %w", d, ErrNegative)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.jumpLocked(d)
	return nil
}

// FastForward jumps virtual time to the earliest pending deadline and
// fires that timer and any others then due. It returns how far time
// jumped (zero when the earliest timer was already due), or false when no
// timer is pending.
func (c *Clock) FastForward() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.heap) == 0 {
		return 0, false
	}
	d := max(c.heap[0].t.when.Sub(c.nowLocked(time.Now())), 0)
	c.jumpLocked(d)
	return d, true
}

// NextDeadline returns the virtual deadline of the earliest pending timer,
// or false when none is pending.
func (c *Clock) NextDeadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.heap) == 0 {
		return time.Time{}, false
	}
	return c.heap[0].t.when, true
}

// Pending returns how many timers and tickers are waiting to fire.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.heap)
}

// nowLocked returns the virtual time at real instant rn; it never returns
// an instant before one it returned already.
func (c *Clock) nowLocked(rn time.Time) time.Time {
	v := c.base
	if !c.paused {
		e := rn.Sub(c.realBase)
		if c.speed != 1 {
			e = scale(e, c.speed)
		}
		v = c.base.Add(e)
	}
	if v.Before(c.last) {
		return c.last
	}
	c.last = v
	return v
}

// rebaseLocked freezes the current virtual time into base so that speed or
// pause state can change from here on.
func (c *Clock) rebaseLocked(rn time.Time) {
	c.base = c.nowLocked(rn)
	c.realBase = rn
	c.armed = false
}

// jumpLocked moves virtual time forward by d, fires what is due and
// re-arms the real timer.
func (c *Clock) jumpLocked(d time.Duration) {
	rn := time.Now()
	c.rebaseLocked(rn)
	c.base = c.base.Add(d)
	c.last = c.base
	c.fireDueLocked(c.base)
	c.rescheduleLocked(rn)
	c.notifyLocked()
}

// rescheduleLocked arms the real timer for the earliest pending deadline,
// or stops it when nothing is pending or time is paused.
func (c *Clock) rescheduleLocked(rn time.Time) {
	if c.paused || len(c.heap) == 0 {
		c.wake.Stop()
		c.armed = false
		return
	}
	when := c.heap[0].t.when
	if c.armed && !c.armedAt.After(when) {
		// Armed for this deadline or an earlier one (whose timer was
		// stopped): an early wake-up finds nothing due and re-arms, which
		// is cheaper than resetting the real timer on every Stop.
		return
	}
	gap := when.Sub(c.nowLocked(rn))
	c.wake.Reset(realWait(gap, c.speed))
	c.armed, c.armedAt = true, when
}

// onWake runs when the real timer goes off: it fires what is due and
// re-arms.
func (c *Clock) onWake() {
	c.mu.Lock()
	defer c.mu.Unlock()
	rn := time.Now()
	c.armed = false
	c.fireDueLocked(c.nowLocked(rn))
	c.rescheduleLocked(rn)
}

func (c *Clock) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// scale multiplies a real duration by speed, saturating.
func scale(d time.Duration, speed float64) time.Duration {
	return saturate(float64(d) * speed)
}

// realWait is the real time to wait for a virtual gap at speed, rounded
// up so that the timer is due when the real timer fires.
func realWait(gap time.Duration, speed float64) time.Duration {
	if gap <= 0 {
		return 0
	}
	if speed == 1 {
		return gap
	}
	return saturate(math.Ceil(float64(gap) / speed))
}

func saturate(f float64) time.Duration {
	switch {
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return time.Duration(f)
}
