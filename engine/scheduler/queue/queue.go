// Package queue is the scheduler's scheduling queue, after kube-scheduler's
// PriorityQueue: an active queue (by priority, then arrival), a back-off
// queue (by back-off expiry: 1 s doubling to 10 s per pod) and a set of
// unschedulable pods that wait for a cluster event or, at the latest, a
// periodic flush (5 minutes).
package queue

import (
	"container/heap"
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podtrace/podtrace/engine/scheduler/framework"
)

// Upstream's defaults.
const (
	DefaultPodInitialBackoff                 = 1 * time.Second
	DefaultPodMaxBackoff                     = 10 * time.Second
	DefaultPodMaxInUnschedulablePodsDuration = 5 * time.Minute
	flushBackoffPeriod                       = 1 * time.Second
	flushUnschedulablePeriod                 = 30 * time.Second
)

// QueuedPodInfo is a pod in the queue with its scheduling history.
type QueuedPodInfo struct {
	*framework.PodInfo
	// Timestamp is when the pod last entered the queue.
	Timestamp time.Time
	// Attempts counts scheduling attempts (incremented by Pop).
	Attempts int
	// UnschedulableCount counts attempts that found no node; ConsecutiveErrorsCount
	// counts attempts that ended in an error (API failure, injected fault).
	UnschedulableCount     int
	ConsecutiveErrorsCount int
	// SchedulingCycle is the queue cycle in which the pod was last popped.
	SchedulingCycle int64
	backoffExpiry   time.Time
	index           int
}

// Config tunes a Queue; zero durations take upstream's defaults.
type Config struct {
	Clock                     clock.WithTicker
	PodInitialBackoff         time.Duration
	PodMaxBackoff             time.Duration
	PodMaxInUnschedulablePods time.Duration
}

// Queue is the scheduling queue. It is safe for concurrent use.
type Queue struct {
	cfg  Config
	mu   sync.Mutex
	wake chan struct{}

	active        podHeap
	backoff       podHeap
	unschedulable map[types.UID]*QueuedPodInfo
	// where maps each queued pod to the sub-queue holding it.
	where    map[types.UID]string
	inFlight map[types.UID]*QueuedPodInfo

	schedulingCycle  int64
	moveRequestCycle int64
}

// Names of the sub-queues, as Where reports them.
const (
	Active        = "Active"
	Backoff       = "Backoff"
	Unschedulable = "Unschedulable"
	InFlight      = "InFlight"
)

// New returns an empty queue.
func New(cfg Config) *Queue {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.PodInitialBackoff == 0 {
		cfg.PodInitialBackoff = DefaultPodInitialBackoff
	}
	if cfg.PodMaxBackoff == 0 {
		cfg.PodMaxBackoff = DefaultPodMaxBackoff
	}
	if cfg.PodMaxInUnschedulablePods == 0 {
		cfg.PodMaxInUnschedulablePods = DefaultPodMaxInUnschedulablePodsDuration
	}
	return &Queue{
		cfg:              cfg,
		wake:             make(chan struct{}, 1),
		active:           podHeap{less: activeLess},
		backoff:          podHeap{less: backoffLess},
		unschedulable:    map[types.UID]*QueuedPodInfo{},
		where:            map[types.UID]string{},
		inFlight:         map[types.UID]*QueuedPodInfo{},
		moveRequestCycle: -1,
	}
}

func priority(p *v1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

func activeLess(a, b *QueuedPodInfo) bool {
	pa, pb := priority(a.Pod), priority(b.Pod)
	if pa != pb {
		return pa > pb
	}
	return a.Timestamp.Before(b.Timestamp)
}

func backoffLess(a, b *QueuedPodInfo) bool { return a.backoffExpiry.Before(b.backoffExpiry) }

// Run flushes completed back-offs every second and pods left unschedulable
// too long every 30 seconds, on the queue's clock, until ctx is done.
func (q *Queue) Run(ctx context.Context) {
	backoffTick := q.cfg.Clock.NewTicker(flushBackoffPeriod)
	defer backoffTick.Stop()
	unschedTick := q.cfg.Clock.NewTicker(flushUnschedulablePeriod)
	defer unschedTick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-backoffTick.C():
			q.FlushBackoffCompleted()
		case <-unschedTick.C():
			q.FlushUnschedulableLeftover()
		}
	}
}

// Add queues a new pending pod in the active queue.
func (q *Queue) Add(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.where[pod.UID]; ok {
		q.updateLocked(pod)
		return
	}
	if _, ok := q.inFlight[pod.UID]; ok {
		return
	}
	pi := &QueuedPodInfo{PodInfo: framework.NewPodInfo(pod), Timestamp: q.cfg.Clock.Now()}
	q.pushActiveLocked(pi)
}

// Update replaces a queued pod. An unschedulable pod whose spec or metadata
// changed (not just its status) is moved back to be tried again.
func (q *Queue) Update(old, pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.where[pod.UID]; !ok {
		if _, ok := q.inFlight[pod.UID]; ok {
			return
		}
		pi := &QueuedPodInfo{PodInfo: framework.NewPodInfo(pod), Timestamp: q.cfg.Clock.Now()}
		q.pushActiveLocked(pi)
		return
	}
	if q.where[pod.UID] == Unschedulable && old != nil && podChanged(old, pod) {
		pi := q.unschedulable[pod.UID]
		pi.PodInfo = framework.NewPodInfo(pod)
		delete(q.unschedulable, pod.UID)
		delete(q.where, pod.UID)
		q.requeueLocked(pi)
		return
	}
	q.updateLocked(pod)
}

func podChanged(old, pod *v1.Pod) bool {
	return !equality.Semantic.DeepEqual(old.Spec, pod.Spec) ||
		!equality.Semantic.DeepEqual(old.Labels, pod.Labels) ||
		!equality.Semantic.DeepEqual(old.Annotations, pod.Annotations)
}

func (q *Queue) updateLocked(pod *v1.Pod) {
	uid := pod.UID
	switch q.where[uid] {
	case Active:
		for _, pi := range q.active.items {
			if pi.Pod.UID == uid {
				pi.PodInfo = framework.NewPodInfo(pod)
				heap.Fix(&q.active, pi.index)
			}
		}
	case Backoff:
		for _, pi := range q.backoff.items {
			if pi.Pod.UID == uid {
				pi.PodInfo = framework.NewPodInfo(pod)
			}
		}
	case Unschedulable:
		q.unschedulable[uid].PodInfo = framework.NewPodInfo(pod)
	}
}

// Delete removes the pod from the queue (it was deleted or bound).
func (q *Queue) Delete(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	uid := pod.UID
	switch q.where[uid] {
	case Active:
		q.active.remove(uid)
	case Backoff:
		q.backoff.remove(uid)
	case Unschedulable:
		delete(q.unschedulable, uid)
	}
	delete(q.where, uid)
}

// Pop blocks until a pod is active and returns it, counting the attempt. It
// returns nil when ctx is done.
func (q *Queue) Pop(ctx context.Context) *QueuedPodInfo {
	for {
		q.mu.Lock()
		if q.active.Len() > 0 {
			pi := heap.Pop(&q.active).(*QueuedPodInfo)
			delete(q.where, pi.Pod.UID)
			q.schedulingCycle++
			pi.Attempts++
			pi.SchedulingCycle = q.schedulingCycle
			q.inFlight[pi.Pod.UID] = pi
			q.mu.Unlock()
			return pi
		}
		q.mu.Unlock()
		select {
		case <-q.wake:
		case <-ctx.Done():
			return nil
		}
	}
}

// Done marks a popped pod as no longer being scheduled (bound, or dropped).
func (q *Queue) Done(uid types.UID) {
	q.mu.Lock()
	delete(q.inFlight, uid)
	q.mu.Unlock()
}

// AddUnschedulable puts back a pod for which no node fit. If a cluster event
// arrived while it was being scheduled, it goes to the back-off queue (or
// straight to active once backed off); otherwise it waits among the
// unschedulable pods. It returns when the pod will be tried again at the
// latest.
func (q *Queue) AddUnschedulable(pi *QueuedPodInfo) time.Time {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.inFlight, pi.Pod.UID)
	pi.UnschedulableCount++
	pi.ConsecutiveErrorsCount = 0
	pi.Timestamp = q.cfg.Clock.Now()
	pi.backoffExpiry = time.Time{}
	if q.moveRequestCycle >= pi.SchedulingCycle {
		return q.requeueLocked(pi)
	}
	q.unschedulable[pi.Pod.UID] = pi
	q.where[pi.Pod.UID] = Unschedulable
	return pi.Timestamp.Add(q.cfg.PodMaxInUnschedulablePods)
}

// AddBackoff puts back a pod whose attempt failed with an error; it is
// retried when its back-off expires, which it returns.
func (q *Queue) AddBackoff(pi *QueuedPodInfo) time.Time {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.inFlight, pi.Pod.UID)
	pi.ConsecutiveErrorsCount++
	pi.Timestamp = q.cfg.Clock.Now()
	pi.backoffExpiry = time.Time{}
	return q.requeueLocked(pi)
}

// requeueLocked moves pi to backoff or, if its back-off is over, active.
func (q *Queue) requeueLocked(pi *QueuedPodInfo) time.Time {
	exp := q.backoffExpiryLocked(pi)
	if exp.After(q.cfg.Clock.Now()) {
		heap.Push(&q.backoff, pi)
		q.where[pi.Pod.UID] = Backoff
		return exp
	}
	q.pushActiveLocked(pi)
	return q.cfg.Clock.Now()
}

func (q *Queue) pushActiveLocked(pi *QueuedPodInfo) {
	heap.Push(&q.active, pi)
	q.where[pi.Pod.UID] = Active
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// BackoffDuration is the back-off after count failed attempts: the initial
// back-off doubled count-1 times, capped at the maximum.
func (q *Queue) BackoffDuration(count int) time.Duration {
	if count <= 0 {
		return 0
	}
	d := q.cfg.PodInitialBackoff
	for i := 1; i < count; i++ {
		d *= 2
		if d >= q.cfg.PodMaxBackoff {
			return q.cfg.PodMaxBackoff
		}
	}
	return min(d, q.cfg.PodMaxBackoff)
}

func (q *Queue) backoffExpiryLocked(pi *QueuedPodInfo) time.Time {
	if pi.backoffExpiry.IsZero() {
		count := pi.UnschedulableCount
		if pi.ConsecutiveErrorsCount > 0 {
			count = pi.ConsecutiveErrorsCount
		}
		pi.backoffExpiry = pi.Timestamp.Add(q.BackoffDuration(count))
	}
	return pi.backoffExpiry
}

// MoveAllToActiveOrBackoff moves every unschedulable pod back, after a
// cluster event that may make them fit (node added or changed, assigned pod
// deleted). Pods being scheduled right now will be requeued too.
func (q *Queue) MoveAllToActiveOrBackoff() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for uid, pi := range q.unschedulable {
		delete(q.unschedulable, uid)
		delete(q.where, uid)
		q.requeueLocked(pi)
	}
	q.moveRequestCycle = q.schedulingCycle
}

// FlushBackoffCompleted moves pods whose back-off is over to the active queue.
func (q *Queue) FlushBackoffCompleted() {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.cfg.Clock.Now()
	for q.backoff.Len() > 0 && !q.backoff.items[0].backoffExpiry.After(now) {
		pi := heap.Pop(&q.backoff).(*QueuedPodInfo)
		q.pushActiveLocked(pi)
	}
}

// FlushUnschedulableLeftover moves pods unschedulable for longer than the
// maximum (5 minutes by default) back to be tried again.
func (q *Queue) FlushUnschedulableLeftover() {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.cfg.Clock.Now()
	for uid, pi := range q.unschedulable {
		if now.Sub(pi.Timestamp) >= q.cfg.PodMaxInUnschedulablePods {
			delete(q.unschedulable, uid)
			delete(q.where, uid)
			q.requeueLocked(pi)
		}
	}
}

// Where returns the sub-queue holding the pod ("" when not queued).
func (q *Queue) Where(uid types.UID) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.inFlight[uid]; ok {
		return InFlight
	}
	return q.where[uid]
}

// Len returns the number of pods in the active, back-off and unschedulable sub-queues.
func (q *Queue) Len() (active, backoff, unschedulable int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.active.Len(), q.backoff.Len(), len(q.unschedulable)
}
