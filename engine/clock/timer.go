package clock

import (
	"time"

	kclock "k8s.io/utils/clock"
)

// timer is one pending wait: a one-shot channel timer, an AfterFunc, or a
// ticker (period > 0). Its fields other than c, ch and fn are
// guarded by c.mu.
type timer struct {
	c      *Clock
	when   time.Time // virtual deadline
	seq    uint64    // creation order, breaks ties between equal deadlines
	idx    int       // position in c.heap, -1 when not pending
	period time.Duration
	ch     chan time.Time // nil for AfterFunc
	fn     func()         // nil for channel timers
}

// After waits for d of virtual time and then sends the virtual time on the
// returned channel.
func (c *Clock) After(d time.Duration) <-chan time.Time { return c.NewTimer(d).C() }

// NewTimer returns a timer that sends the virtual time on its channel once
// d of virtual time has passed. Stop and Reset behave like the standard
// library's (Go 1.23 and later): after either returns, no stale value is
// received.
func (c *Clock) NewTimer(d time.Duration) kclock.Timer {
	t := &timer{c: c, idx: -1, ch: make(chan time.Time, 1)}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.addLocked(t, d)
	return t
}

// AfterFunc waits for d of virtual time and then calls f in its own
// goroutine. The returned timer's C is nil; Stop prevents the call if f has
// not started.
func (c *Clock) AfterFunc(d time.Duration, f func()) kclock.Timer {
	t := &timer{c: c, idx: -1, fn: f}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.addLocked(t, d)
	return t
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
	c.push(t)
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
		// The real timer stays armed: if t was the earliest, the wake-up
		// finds nothing due and re-arms for the next one.
		c.remove(t.idx)
		pending = true
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
	for len(c.heap) > 0 && !c.heap[0].t.when.After(now) {
		t := c.heap[0].t
		if t.period > 0 {
			missed := now.Sub(t.when) / t.period
			t.when = t.when.Add(t.period * (missed + 1))
			c.fixHead()
		} else {
			c.remove(0)
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

// timerHeap is a binary min-heap of pending timers ordered by deadline,
// then creation order. Entries carry their sort key so that sifting
// compares without dereferencing timers; it is hand-written rather than
// container/heap to avoid boxing an entry on every push.
type timerHeap []entry

type entry struct {
	key int64 // virtual deadline as nanoseconds since the clock's epoch
	seq uint64
	t   *timer
}

func (a entry) less(b entry) bool {
	return a.key < b.key || a.key == b.key && a.seq < b.seq
}

func (h timerHeap) set(i int, e entry) {
	h[i] = e
	e.t.idx = i
}

func (h timerHeap) up(i int) {
	e := h[i]
	for i > 0 {
		p := (i - 1) / 2
		if !e.less(h[p]) {
			break
		}
		h.set(i, h[p])
		i = p
	}
	h.set(i, e)
}

// down sifts h[i] down; it reports whether it moved.
func (h timerHeap) down(i int) bool {
	e, n, i0 := h[i], len(h), i
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h[r].less(h[l]) {
			m = r
		}
		if !h[m].less(e) {
			break
		}
		h.set(i, h[m])
		i = m
	}
	h.set(i, e)
	return i > i0
}

// push adds t, whose when and seq are set.
func (c *Clock) push(t *timer) {
	c.heap = append(c.heap, entry{key: c.key(t.when), seq: t.seq, t: t})
	c.heap.up(len(c.heap) - 1)
}

// remove takes the timer at index i out of the heap.
func (c *Clock) remove(i int) *timer {
	h := c.heap
	t, last := h[i].t, len(h)-1
	if i != last {
		h.set(i, h[last])
	}
	h[last] = entry{}
	c.heap = h[:last]
	if i != last {
		if !c.heap.down(i) {
			c.heap.up(i)
		}
	}
	t.idx = -1
	return t
}

// fixHead re-sorts heap[0] after its timer's deadline moved later.
func (c *Clock) fixHead() {
	c.heap[0].key = c.key(c.heap[0].t.when)
	c.heap.down(0)
}

// key turns a virtual instant into a heap key, saturating for deadlines
// centuries away.
func (c *Clock) key(when time.Time) int64 { return int64(when.Sub(c.epoch)) }
