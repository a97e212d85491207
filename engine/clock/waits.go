package clock

import (
	"slices"
	"time"

	kclock "k8s.io/utils/clock"
)

// A labelled wait is a timer a component names because a person would want
// to see it or skip to it: an image pull back-off, a crash-loop restart, a
// scheduling retry. Unlabelled timers (workqueue heartbeats, lease
// renewals, probe periods) are housekeeping: FastForward stops at them,
// FastForwardWait jumps past them.

// Wait is a pending labelled timer.
type Wait struct {
	Label    string    // what is waiting, e.g. "back-off pulling image ns/pod nginx"
	Deadline time.Time // virtual instant it fires
}

// Labeler is implemented by clocks that can name a wait; *Clock does.
type Labeler interface {
	// NewTimerLabeled is NewTimer for a wait named label.
	NewTimerLabeled(d time.Duration, label string) kclock.Timer
	// AfterFuncLabeled is AfterFunc for a wait named label.
	AfterFuncLabeled(d time.Duration, label string, f func()) kclock.Timer
}

var _ Labeler = (*Clock)(nil)

// NewTimerLabeled is NewTimer for a wait that Waits lists under label and
// FastForwardWait can jump to. An empty label makes a plain timer.
func (c *Clock) NewTimerLabeled(d time.Duration, label string) kclock.Timer {
	t := &timer{c: c, idx: -1, ch: make(chan time.Time, 1), label: label}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.addLocked(t, d)
	return t
}

// AfterFuncLabeled is AfterFunc for a wait that Waits lists under label and
// FastForwardWait can jump to. An empty label makes a plain timer.
func (c *Clock) AfterFuncLabeled(d time.Duration, label string, f func()) kclock.Timer {
	t := &timer{c: c, idx: -1, fn: f, label: label}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.addLocked(t, d)
	return t
}

// LabeledTimer returns a timer named label when c can label waits (see
// Labeler), and c.NewTimer(d) otherwise, so components can name their
// back-offs while holding only a k8s.io/utils/clock interface.
func LabeledTimer(c kclock.Clock, d time.Duration, label string) kclock.Timer {
	if l, ok := c.(Labeler); ok {
		return l.NewTimerLabeled(d, label)
	}
	return c.NewTimer(d)
}

// LabeledAfterFunc returns an AfterFunc timer named label when c can label
// waits (see Labeler), and c.AfterFunc(d, f) otherwise.
func LabeledAfterFunc(c kclock.WithDelayedExecution, d time.Duration, label string, f func()) kclock.Timer {
	if l, ok := c.(Labeler); ok {
		return l.AfterFuncLabeled(d, label, f)
	}
	return c.AfterFunc(d, f)
}

// Waits returns the pending labelled timers, earliest first.
func (c *Clock) Waits() []Wait {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ws []*timer
	for _, e := range c.heap {
		if t := e.t; t.label != "" {
			ws = append(ws, t)
		}
	}
	slices.SortFunc(ws, func(a, b *timer) int {
		switch {
		case a == b:
			return 0
		case earlier(a, b):
			return -1
		}
		return 1
	})
	out := make([]Wait, len(ws))
	for i, t := range ws {
		out[i] = Wait{Label: t.label, Deadline: t.when}
	}
	return out
}

// FastForwardWait jumps virtual time to the earliest labelled wait and
// fires it together with every timer due by then (tickers tick once). It
// returns that wait and how far time jumped, or false when no labelled
// wait is pending.
func (c *Clock) FastForwardWait() (Wait, time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var next *timer
	for _, e := range c.heap {
		if t := e.t; t.label != "" && (next == nil || earlier(t, next)) {
			next = t
		}
	}
	if next == nil {
		return Wait{}, 0, false
	}
	w := Wait{Label: next.label, Deadline: next.when}
	d := max(next.when.Sub(c.nowLocked(time.Now())), 0)
	c.jumpLocked(d)
	return w, d, true
}
