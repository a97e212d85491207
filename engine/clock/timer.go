package clock

import (
	"container/heap"
	"time"

	kclock "k8s.io/utils/clock"
)

// timer is one pending wait: a one-shot channel timer, an AfterFunc, or a
// ticker (period > 0). Its fields other than c, ch, fn and label are
// guarded by c.mu.
type timer struct {
	c      *Clock
	when   time.Time // virtual deadline
	seq    uint64    // creation order, breaks ties between equal deadlines
	idx    int       // position in c.heap, -1 when not pending
	period time.Duration
	ch     chan time.Time // nil for AfterFunc
	fn     func()         // nil for channel timers
	label  string         // non-empty for a wait worth showing (see Waits)
}

// After waits for d of virtual time and then sends the virtual time on the
// returned channel.
func (c *Clock) After(d time.Duration) <-chan time.Time { return c.NewTimer(d).C() }

// NewTimer returns a timer that sends the virtual time on its channel once
// d of virtual time has passed. Stop and Reset behave like the standard
// library's (Go 1.23 and later): after either returns, no stale value is
// received.
func (c *Clock) NewTimer(d time.Duration) kclock.Timer { return c.NewTimerLabeled(d, "") }

// AfterFunc waits for d of virtual time and then calls f in its own
// goroutine. The returned timer's C is nil; Stop prevents the call if f has
// not started.
func (c *Clock) AfterFunc(d time.Duration, f func()) kclock.Timer {
	return c.AfterFuncLabeled(d, "", f)
}

// Sleep blocks for d of virtual time. While the clock is paused it blocks
// until it is resumed or advanced.
func (c *Clock) Sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	<-c.NewTimer(d).C()
}

// Tick returns the channel of a new ticker, or nil if d <= 0, like
// time.Tick.
func (c *Clock) Tick(d time.Duration) <-chan time.Time {
	if d <= 0 {
		return nil
	}
	return c.NewTicker(d).C()
}

// NewTicker returns a ticker that sends the virtual time every d of virtual
// time. Like time.Ticker it drops ticks for a slow receiver, and after a
// jump over several periods it ticks once. It panics if d <= 0.
func (c *Clock) NewTicker(d time.Duration) kclock.Ticker {
	if d <= 0 {
		panic("non-positive interval for NewTicker")
	}
	t := &timer{c: c, idx: -1, period: d, ch: make(chan time.Time, 1)}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.addLocked(t, d)
	return ticker{t}
}

// C returns the timer's channel (nil for AfterFunc timers).
func (t *timer) C() <-chan time.Time { return t.ch }

// Stop prevents the timer from firing. It returns true if the call stopped
// it, false if it had already fired (and its value was received) or been
// stopped.
func (t *timer) Stop() bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopLocked(t)
}

// Reset makes the timer fire after d of virtual time from now. It returns
// true if the timer was pending, false if it had fired or been stopped.
func (t *timer) Reset(d time.Duration) bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	pending := c.stopLocked(t)
	c.addLocked(t, d)
	return pending
}

// ticker adapts a periodic timer to kclock.Ticker.
type ticker struct{ t *timer }

// C returns the channel on which ticks are delivered.
func (k ticker) C() <-chan time.Time { return k.t.ch }

// Stop turns the ticker off; no tick is received after Stop returns.
func (k ticker) Stop() { k.t.Stop() }

// addLocked schedules t at now+d and fires it at once if that is not in
// the future.
func (c *Clock) addLocked(t *timer, d time.Duration) {
	rn := time.Now()
	now := c.nowLocked(rn)
	t.when = now.Add(d)
	c.seq++
	t.seq = c.seq
	heap.Push(&c.heap, t)
	if d <= 0 {
		c.fireDueLocked(now)
	}
	c.rescheduleLocked(rn)
}

// stopLocked removes t from the heap and drains its channel; it reports
// whether t was pending or had an undelivered value.
func (c *Clock) stopLocked(t *timer) bool {
	pending := false
	if t.idx >= 0 {
		heap.Remove(&c.heap, t.idx)
		pending = true
		c.rescheduleLocked(time.Now())
	}
	if t.ch != nil {
		select {
		case <-t.ch:
			pending = true
		default:
		}
	}
	return pending
}

// fireDueLocked fires, in deadline order, every timer due at or before now.
// One-shot timers leave the heap; tickers move to their next deadline
// after now, skipping missed periods.
func (c *Clock) fireDueLocked(now time.Time) {
	for len(c.heap) > 0 && !c.heap[0].when.After(now) {
		t := c.heap[0]
		if t.period > 0 {
			missed := now.Sub(t.when) / t.period
			t.when = t.when.Add(t.period * (missed + 1))
			heap.Fix(&c.heap, 0)
		} else {
			heap.Pop(&c.heap)
		}
		switch {
		case t.fn != nil:
			go t.fn()
		default:
			select {
			case t.ch <- now:
			default: // a ticker's receiver is behind: drop the tick
			}
		}
	}
}

// timerHeap orders pending timers by deadline, then creation order.
type timerHeap []*timer

func (h timerHeap) Len() int { return len(h) }

func (h timerHeap) Less(i, j int) bool { return earlier(h[i], h[j]) }

// earlier reports whether a fires before b.
func earlier(a, b *timer) bool {
	if !a.when.Equal(b.when) {
		return a.when.Before(b.when)
	}
	return a.seq < b.seq
}

func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx = i
	h[j].idx = j
}

func (h *timerHeap) Push(x any) {
	t := x.(*timer)
	t.idx = len(*h)
	*h = append(*h, t)
}

func (h *timerHeap) Pop() any {
	old := *h
	n := len(old) - 1
	t := old[n]
	old[n] = nil
	t.idx = -1
	*h = old[:n]
	return t
}
