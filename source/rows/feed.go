package rows

import (
	"context"
	"sync"

	"github.com/podtrace/podtrace/stages"
)

// Feed hands rows to one reader without ever making the informers that
// push them wait: a row not yet read is replaced by a newer row of the same
// object, so a slow reader sees each object's latest state, in the order
// the objects changed.
type Feed struct {
	mu      sync.Mutex
	pending map[string]stages.Row
	order   []string
	wake    chan struct{}
	c       chan stages.Row
	tees    []*Feed
}

// NewFeed returns a feed whose channel is closed when ctx ends.
func NewFeed(ctx context.Context) *Feed {
	f := &Feed{pending: map[string]stages.Row{}, wake: make(chan struct{}, 1), c: make(chan stages.Row, 64)}
	go f.run(ctx)
	return f
}

// Push queues r; it never blocks.
func (f *Feed) Push(r stages.Row) {
	key := r.Kind + "/" + r.Key()
	f.mu.Lock()
	if _, queued := f.pending[key]; !queued {
		f.order = append(f.order, key)
	}
	f.pending[key] = r
	tees := f.tees
	f.mu.Unlock()
	for _, t := range tees {
		t.Push(r)
	}
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// Tee returns a feed for a second reader (a recording): it receives every
// row pushed to f from now on. Its channel is closed when ctx ends.
func (f *Feed) Tee(ctx context.Context) *Feed {
	t := NewFeed(ctx)
	f.mu.Lock()
	f.tees = append(f.tees, t)
	f.mu.Unlock()
	return t
}

// C returns the channel rows arrive on.
func (f *Feed) C() <-chan stages.Row { return f.c }

func (f *Feed) run(ctx context.Context) {
	defer close(f.c)
	for {
		select {
		case <-f.wake:
		case <-ctx.Done():
			return
		}
		for {
			f.mu.Lock()
			if len(f.order) == 0 {
				f.mu.Unlock()
				break
			}
			key := f.order[0]
			f.order = f.order[1:]
			r := f.pending[key]
			delete(f.pending, key)
			f.mu.Unlock()
			select {
			case f.c <- r:
			case <-ctx.Done():
				return
			}
		}
	}
}
