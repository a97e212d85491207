package trace

import (
	"math"
	"slices"
	"time"

	"github.com/podtrace/podtrace/stages"
)

// Settle bounds how long a reader holds a pod's event whose predecessor
// stages, reported by other components, have not ended yet: long enough to
// cover the race between a component's response and another's watch, short
// enough that a pod whose predecessor's end never comes is not held up for
// long. Components never wait for it: ordering happens for readers.
const Settle = time.Second

// causal puts the events one reader receives in causal order. Components
// run concurrently and learn of each other's work through watches, so a
// stage that can only start after another (schedule after persist and
// reconcile, kubelet after bind) can be reported before that other stage's
// end. causal holds such an event, and the pod's events behind it, until
// the predecessor's end has been passed on or the event has waited settle;
// an event of an earlier stage overtakes the held ones. Nothing else is
// reordered, and other objects' events are never held.
type causal struct {
	settle  time.Duration
	pods    map[podKey]*lane
	waiting map[podKey]*lane // the lanes holding events
}

// podKey names a pod; events of other kinds are never held.
type podKey struct{ namespace, name string }

// lane is what a reader has been passed of one pod, as bitmasks over stage
// indexes, and the pod's events it holds, in arrival order.
type lane struct {
	seen, ended uint32
	held        []heldEvent
}

type heldEvent struct {
	e     stages.Event
	since time.Time
}

func newCausal(settle time.Duration) *causal {
	return &causal{settle: settle, pods: map[podKey]*lane{}, waiting: map[podKey]*lane{}}
}

func bit(s stages.ID) uint32 {
	if i := s.Index(); i >= 0 {
		return 1 << uint(i)
	}
	return 0
}

// add takes an event arriving at now and appends to out the events to pass
// on, in order.
func (c *causal) add(e stages.Event, now time.Time, out []stages.Event) []stages.Event {
	if e.Kind != "" && e.Kind != stages.KindPod {
		return append(out, e)
	}
	k := podKey{e.Namespace, e.Pod}
	l := c.pods[k]
	if l == nil {
		l = &lane{}
		c.pods[k] = l
	}
	if len(l.held) == 0 && l.ready(e.Stage) {
		return c.pass(k, l, e, out)
	}
	l.held = append(l.held, heldEvent{e: e, since: now})
	c.waiting[k] = l
	return c.release(k, l, now, out)
}

// expire appends to out the events that may go at now: those whose
// predecessors have ended, and those that have waited settle.
func (c *causal) expire(now time.Time, out []stages.Event) []stages.Event {
	for k, l := range c.waiting {
		out = c.release(k, l, now, out)
	}
	return out
}

// next returns when the first held event will have waited settle, and
// whether any event is held.
func (c *causal) next() (time.Time, bool) {
	var first time.Time
	for _, l := range c.waiting {
		if since := l.held[0].since; first.IsZero() || since.Before(first) {
			first = since
		}
	}
	return first.Add(c.settle), !first.IsZero()
}

// release passes on the lane's held events that may go at now, until none can.
func (c *causal) release(k podKey, l *lane, now time.Time, out []stages.Event) []stages.Event {
	for {
		i := l.next(now, c.settle)
		if i < 0 {
			break
		}
		e := l.held[i].e
		l.held = slices.Delete(l.held, i, i+1)
		out = c.pass(k, l, e, out)
	}
	if len(l.held) == 0 {
		delete(c.waiting, k)
	}
	return out
}

// pass notes e as passed on and appends it to out. A pod whose deletion
// ended is forgotten: a pod of the same name later is a new one.
func (c *causal) pass(k podKey, l *lane, e stages.Event, out []stages.Event) []stages.Event {
	b := bit(e.Stage)
	l.seen |= b
	if e.Status.Terminal() {
		l.ended |= b
	}
	if e.Stage == stages.Delete && e.Status.Terminal() {
		l.seen, l.ended = 0, 0
		if len(l.held) == 0 {
			delete(c.pods, k)
		}
	}
	return append(out, e)
}

// next returns the index of the first held event that may go at now, or
// -1: one whose predecessors have ended and that overtakes no event still
// held but of a later stage; else the oldest, once it has waited settle.
func (l *lane) next(now time.Time, settle time.Duration) int {
	first := math.MaxInt // the earliest stage among the events that stay
	for i, h := range l.held {
		idx := h.e.Stage.Index()
		if (i == 0 || (idx >= 0 && idx < first)) && l.ready(h.e.Stage) {
			return i
		}
		first = min(first, idx)
	}
	if len(l.held) > 0 && now.Sub(l.held[0].since) >= settle {
		return 0
	}
	return -1
}

// ready reports whether the stages that must end before stage, reported by
// other components, have ended for the pod. A pod whose persist was not
// seen was not created while the reader listened (before a restart, or
// before it subscribed), and one whose schedule was not seen never went
// through the scheduler (spec.nodeName set by its author): nothing to wait
// for. A pod a controller created has its reconcile stage seen before
// persist.
func (l *lane) ready(stage stages.ID) bool {
	var ifSeen stages.ID
	var need uint32
	switch stage {
	case stages.Schedule:
		ifSeen, need = stages.Persist, bit(stages.Persist)|l.seen&bit(stages.Reconcile)
	case stages.Kubelet:
		ifSeen, need = stages.Schedule, bit(stages.Bind)
	default:
		return true
	}
	return l.seen&bit(ifSeen) == 0 || l.ended&need == need
}
