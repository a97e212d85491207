package model

import (
	"context"
	"sync"
)

// subscriber is one reader of container events, with an unbounded queue
// so that the runtime never blocks or drops an exit.
type subscriber struct {
	mu    sync.Mutex
	queue []ContainerEvent
	wake  chan struct{}
}

// Events streams container state changes until ctx is done.
func (r *Runtime) Events(ctx context.Context) <-chan ContainerEvent {
	s := &subscriber{wake: make(chan struct{}, 1)}
	r.mu.Lock()
	r.subs = append(r.subs, s)
	r.mu.Unlock()
	out := make(chan ContainerEvent, 64)
	go func() {
		defer close(out)
		defer r.unsubscribe(s)
		for {
			select {
			case <-s.wake:
			case <-ctx.Done():
				return
			}
			s.mu.Lock()
			batch := s.queue
			s.queue = nil
			s.mu.Unlock()
			for _, e := range batch {
				select {
				case out <- e:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}

func (r *Runtime) unsubscribe(s *subscriber) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, x := range r.subs {
		if x == s {
			r.subs = append(r.subs[:i], r.subs[i+1:]...)
			return
		}
	}
}

func (r *Runtime) publish(e ContainerEvent) {
	r.mu.Lock()
	subs := append([]*subscriber(nil), r.subs...)
	r.mu.Unlock()
	for _, s := range subs {
		s.mu.Lock()
		s.queue = append(s.queue, e)
		s.mu.Unlock()
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}
