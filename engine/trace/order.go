package trace

import (
	"context"
	"sync"
	"time"

	"github.com/podtrace/podtrace/stages"
)

// orderWait bounds how long a stage waits for its predecessor to be
// reported: long enough to cover the race between a component's response
// and another's watch, short enough that objects whose earlier stages were
// never traced (created before a restart) are not held up.
const orderWait = 2 * time.Second

// progress remembers which stages of each pod have ended, so that a stage
// that can only start after another (schedule after persist, kubelet after
// bind) is reported after it. Components run concurrently and learn of each
// other's work through watches; without this, a lane could show schedule
// before the create that made the pod had finished reporting.
type progress struct {
	mu     sync.Mutex
	ended  map[string]uint32 // pod key → bitmask of ended stages
	notify chan struct{}     // closed and replaced whenever ended changes
}

func newProgress() *progress {
	return &progress{ended: map[string]uint32{}, notify: make(chan struct{})}
}

// record notes an event; only a pod's ended stages matter.
func (p *progress) record(e stages.Event) {
	if e.Kind != stages.KindPod || (e.Status != stages.Succeeded && e.Status != stages.Failed) {
		return
	}
	key := e.Key()
	p.mu.Lock()
	defer p.mu.Unlock()
	if e.Stage == stages.Delete {
		delete(p.ended, key)
	} else {
		p.ended[key] |= 1 << uint(e.Stage.Index())
	}
	close(p.notify)
	p.notify = make(chan struct{})
}

// await waits until every stage in need has ended for the pod, ctx ends, or
// orderWait passes.
func (p *progress) await(ctx context.Context, key string, need ...stages.ID) {
	var mask uint32
	for _, s := range need {
		mask |= 1 << uint(s.Index())
	}
	var timeout <-chan time.Time
	for {
		p.mu.Lock()
		done, notify := p.ended[key]&mask == mask, p.notify
		p.mu.Unlock()
		if done {
			return
		}
		if timeout == nil {
			t := time.NewTimer(orderWait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-notify:
		case <-timeout:
			return
		case <-ctx.Done():
			return
		}
	}
}

// predecessors returns the stages, reported by other components, that must
// have ended before stage starts for ref.
func predecessors(ref Ref, stage stages.ID) []stages.ID {
	if ref.Kind != "" && ref.Kind != stages.KindPod {
		return nil
	}
	switch stage {
	case stages.Schedule:
		if ref.Owned {
			return []stages.ID{stages.Persist, stages.Reconcile}
		}
		return []stages.ID{stages.Persist}
	case stages.Kubelet:
		return []stages.ID{stages.Bind}
	}
	return nil
}
