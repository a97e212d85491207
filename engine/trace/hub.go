package trace

import (
	"sync"
	"sync/atomic"

	"github.com/podtrace/podtrace/stages"
)

// Hub fans stage events out to subscribers. Emit never blocks: each
// subscriber has an unbounded queue drained by its own goroutine, so a slow
// reader (a UI drawing a frame) can never stall the engine.
type Hub struct {
	mu   sync.Mutex
	subs map[*Subscription]struct{}
}

// NewHub returns an empty hub.
func NewHub() *Hub { return &Hub{subs: map[*Subscription]struct{}{}} }

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
	s := &Subscription{c: make(chan stages.Event, 256), wake: make(chan struct{}, 1), done: make(chan struct{})}
	h.mu.Lock()
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
	// unsent counts events pushed but not yet handed to the channel.
	unsent atomic.Int64
	wake   chan struct{}
	done   chan struct{}
	once   sync.Once
}

// C returns the channel events arrive on, in emit order. It is closed after Close.
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
	var batch []stages.Event
	for {
		select {
		case <-s.wake:
		case <-s.done:
			return
		}
		s.mu.Lock()
		batch, s.queue = s.queue, batch[:0]
		s.mu.Unlock()
		for _, e := range batch {
			select {
			case s.c <- e:
				s.unsent.Add(-1)
			case <-s.done:
				return
			}
		}
	}
}

// Pending returns how many events are queued but not yet received.
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
