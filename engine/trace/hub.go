package trace

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/podtrace/podtrace/stages"
)

// Hub fans stage events out to subscribers. Emit never blocks: each
// subscriber has an unbounded queue drained by its own goroutine, so a slow
// reader (a UI drawing a frame) can never stall the engine. That goroutine
// also puts each pod's events in causal order (see Subscription.C).
type Hub struct {
	mu     sync.Mutex
	subs   map[*Subscription]struct{}
	settle time.Duration // how long a subscription holds an event at most
}

// NewHub returns an empty hub whose subscriptions hold an event for at most Settle.
func NewHub() *Hub { return &Hub{subs: map[*Subscription]struct{}{}, settle: Settle} }

// Emit queues e for every subscriber.
func (h *Hub) Emit(e stages.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		s.push(e)
	}
}

// Subscribe returns a subscription that receives every event emitted from now on.
func (h *Hub) Subscribe() *Subscription {
	h.mu.Lock()
	s := &Subscription{c: make(chan stages.Event, 256), wake: make(chan struct{}, 1), done: make(chan struct{}),
		order: newCausal(h.settle)}
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	go s.run()
	s.hub = h
	return s
}

// Subscription is one reader of a Hub.
type Subscription struct {
	hub   *Hub
	c     chan stages.Event
	mu    sync.Mutex
	queue []stages.Event
	// unsent counts events pushed but not yet handed to the channel,
	// those held for order included.
	unsent atomic.Int64
	order  *causal // used by run only
	wake   chan struct{}
	done   chan struct{}
	once   sync.Once
}

// C returns the channel events arrive on, in emit order, except that a
// pod's event whose predecessor stages, reported by other components, have
// not ended (schedule before persist and, for a pod a controller created,
// reconcile; kubelet before bind) is held, with the pod's later events,
// until they have, or for at most the hub's settle window (Settle); an
// event of an earlier stage of that pod goes before the held ones. Other
// pods' events are never held. It is closed after Close.
func (s *Subscription) C() <-chan stages.Event { return s.c }

// Close stops the subscription; events still queued are dropped.
func (s *Subscription) Close() {
	s.once.Do(func() {
		s.hub.mu.Lock()
		delete(s.hub.subs, s)
		s.hub.mu.Unlock()
		close(s.done)
	})
}

func (s *Subscription) push(e stages.Event) {
	s.mu.Lock()
	s.queue = append(s.queue, e)
	s.unsent.Add(1)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Subscription) run() {
	defer close(s.c)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var batch, out []stages.Event
	for {
		var settled <-chan time.Time
		if at, ok := s.order.next(); ok {
			timer.Reset(time.Until(at))
			settled = timer.C
		}
		select {
		case <-s.wake:
		case <-settled:
		case <-s.done:
			return
		}
		s.mu.Lock()
		batch, s.queue = s.queue, batch[:0]
		s.mu.Unlock()
		now := time.Now()
		out = out[:0]
		for _, e := range batch {
			out = s.order.add(e, now, out)
		}
		out = s.order.expire(now, out)
		for _, e := range out {
			select {
			case s.c <- e:
				s.unsent.Add(-1)
			case <-s.done:
				return
			}
		}
	}
}

// Pending returns how many events are queued, or held for order, but not yet received.
func (s *Subscription) Pending() int {
	return int(s.unsent.Load()) + len(s.c)
}

// Recording keeps every event a Hub emits from its start, for tests and
// checks that look back over what happened.
type Recording struct {
	sub    *Subscription
	mu     sync.Mutex
	events []stages.Event
}

// Record starts a recording of the hub's events.
func (h *Hub) Record() *Recording {
	r := &Recording{sub: h.Subscribe()}
	go func() {
		for e := range r.sub.C() {
			r.mu.Lock()
			r.events = append(r.events, e)
			r.mu.Unlock()
		}
	}()
	return r
}

// Events returns a copy of the events recorded so far.
func (r *Recording) Events() []stages.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]stages.Event(nil), r.events...)
}

// Stop ends the recording.
func (r *Recording) Stop() { r.sub.Close() }
