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
	pods   map[string]*stageMasks
	notify chan struct{} // closed and replaced whenever a stage ends
}

// stageMasks are bitmasks over stage indexes, and when a stage other than
// ready last ended.
type stageMasks struct {
	seen, ended uint32
	lastEnd     time.Time
}

func newProgress() *progress {
	return &progress{pods: map[string]*stageMasks{}, notify: make(chan struct{})}
}

func bit(s stages.ID) uint32 { return 1 << uint(s.Index()) }

// record notes which stages of a pod have been seen and which have ended.
func (p *progress) record(e stages.Event) {
	if e.Kind != stages.KindPod {
		return
	}
	key := e.Key()
	ended := e.Status == stages.Succeeded || e.Status == stages.Failed
	p.mu.Lock()
	defer p.mu.Unlock()
	if e.Stage == stages.Delete && ended {
		delete(p.pods, key)
		return
	}
	m := p.pods[key]
	if m == nil {
		m = &stageMasks{}
		p.pods[key] = m
	}
	m.seen |= bit(e.Stage)
	if ended && e.Stage != stages.Ready && e.Time.After(m.lastEnd) {
		m.lastEnd = e.Time
	}
	if ended && m.ended&bit(e.Stage) == 0 {
		m.ended |= bit(e.Stage)
		close(p.notify)
		p.notify = make(chan struct{})
	}
}

// lastEnd is when a stage of the pod other than ready last ended.
func (p *progress) lastEnd(key string) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	if m := p.pods[key]; m != nil {
		return m.lastEnd
	}
	return time.Time{}
}

// await waits until every stage in need has ended for the pod, ctx ends, or
// orderWait passes. With ifSeen set, it waits only if that stage has been seen
// for the pod (a pod created with spec.nodeName never sees the scheduler).
func (p *progress) await(ctx context.Context, key string, ifSeen stages.ID, need ...stages.ID) {
	var mask uint32
	for _, s := range need {
		mask |= bit(s)
	}
	var timeout <-chan time.Time
	for {
		p.mu.Lock()
		m := p.pods[key]
		if m == nil {
			m = &stageMasks{}
		}
		done, notify := m.ended&mask == mask, p.notify
		if ifSeen != "" && m.seen&bit(ifSeen) == 0 {
			done = true
		}
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
// have ended before stage starts for ref, and the stage whose having been
// seen makes the wait apply ("" for always).
func predecessors(ref Ref, stage stages.ID) (stages.ID, []stages.ID) {
	if ref.Kind != "" && ref.Kind != stages.KindPod {
		return "", nil
	}
	switch stage {
	case stages.Schedule:
		// The API server reports persist's start before the write, so a pod
		// whose persist was not seen was not created through this engine's
		// API (a test's fake client, a cluster restarted): nothing to wait for.
		if ref.Owned {
			return stages.Persist, []stages.ID{stages.Persist, stages.Reconcile}
		}
		return stages.Persist, []stages.ID{stages.Persist}
	case stages.Kubelet:
		return stages.Schedule, []stages.ID{stages.Bind}
	}
	return "", nil
}
