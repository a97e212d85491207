package controllerutil

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

// QueueConfig configures a Queue.
type QueueConfig struct {
	// Name names the work queue (its metrics).
	Name string
	// Component is the stage component of the retrying reconcile events.
	Component string
	// Clock drives the queue's delays and the retry times; real time when nil.
	Clock clock.WithTicker
	// Tracer receives the retrying reconcile events; may be nil.
	Tracer *trace.Tracer
	// RateLimiter paces retries of a failing key; client-go's default
	// controller rate limiter when nil.
	RateLimiter workqueue.TypedRateLimiter[string]
}

// Queue is a workload controller's rate-limited work queue of
// "namespace/name" keys and the workers that drain it. A sync that fails is
// retried after the rate limiter's back-off, and the writes it recorded as
// failed (AddFailure) are reported then as retrying reconcile stage events
// whose NextTry is the time of that retry. The embedded work queue's methods
// (Add, AddAfter, NumRequeues, ...) are there to use directly.
type Queue struct {
	workqueue.TypedRateLimitingInterface[string]

	limiter   workqueue.TypedRateLimiter[string]
	clock     clock.PassiveClock
	tracer    *trace.Tracer
	component string
	synced    []cache.InformerSynced

	mu       sync.Mutex
	failures map[string][]Failure // failed writes of the current sync, by key
}

// Failure is one failed write of a sync, reported once its retry time is known.
type Failure struct {
	// Ref is the lane the retrying reconcile event belongs to.
	Ref trace.Ref
	// Start is when the write began.
	Start time.Time
	// Reason and Message are the event's upstream reason and message.
	Reason, Message string
	// Attempt is the sync's attempt number (Queue.Attempt).
	Attempt int
}

// NewQueue returns an empty queue; Start runs its workers.
func NewQueue(cfg QueueConfig) *Queue {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.RateLimiter == nil {
		cfg.RateLimiter = workqueue.DefaultTypedControllerRateLimiter[string]()
	}
	return &Queue{
		TypedRateLimitingInterface: workqueue.NewTypedRateLimitingQueueWithConfig(cfg.RateLimiter,
			workqueue.TypedRateLimitingQueueConfig[string]{Name: cfg.Name, Clock: cfg.Clock}),
		limiter:   cfg.RateLimiter,
		clock:     cfg.Clock,
		tracer:    cfg.Tracer,
		component: cfg.Component,
		failures:  map[string][]Failure{},
	}
}

// Start starts factory's informers and, once the caches of synced are
// filled, workers goroutines that call sync for each key; it returns at
// once. When ctx is done the queue and the informers shut down and the
// workers stop.
func (q *Queue) Start(ctx context.Context, factory informers.SharedInformerFactory, workers int,
	sync func(ctx context.Context, key string) error, synced ...cache.InformerSynced) {
	q.synced = synced
	factory.Start(ctx.Done())
	go func() {
		<-ctx.Done()
		q.ShutDown()
		factory.Shutdown()
	}()
	go func() {
		if !cache.WaitForCacheSync(ctx.Done(), synced...) {
			return
		}
		for i := 0; i < workers; i++ {
			go func() {
				for q.processNextWorkItem(ctx, sync) {
				}
			}()
		}
	}()
}

// HasSynced reports whether the caches Start waits for are filled.
func (q *Queue) HasSynced() bool {
	for _, s := range q.synced {
		if !s() {
			return false
		}
	}
	return len(q.synced) > 0
}

func (q *Queue) processNextWorkItem(ctx context.Context, sync func(context.Context, string) error) bool {
	key, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(key)
	err := sync(ctx, key)
	failed := q.takeFailures(key)
	if err == nil {
		q.Forget(key)
		return true
	}
	if ctx.Err() != nil {
		return false
	}
	// AddRateLimited, spelled out so that the retry time is known. Upstream
	// drops a key after 15 retries and relies on resyncs; podtrace has no
	// resync, so it keeps retrying with the rate limiter's back-off.
	delay := q.limiter.When(key)
	q.AddAfter(key, delay)
	next := q.clock.Now().Add(delay)
	for _, f := range failed {
		q.tracer.BeginAt(f.Ref, stages.Reconcile, q.component, f.Start).
			With(func(e *stages.Event) { e.Attempt = f.Attempt }).
			Retry(f.Reason, f.Message, next)
	}
	return true
}

// Attempt is the attempt number of the current sync of key: 1, then one
// more for every rate-limited retry since the key last synced cleanly.
func (q *Queue) Attempt(key string) int { return q.NumRequeues(key) + 1 }

// AddFailure records a failed write of the current sync of key, to be
// reported as retrying once the sync returns its error.
func (q *Queue) AddFailure(key string, f Failure) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.failures[key] = append(q.failures[key], f)
}

func (q *Queue) takeFailures(key string) []Failure {
	q.mu.Lock()
	defer q.mu.Unlock()
	f := q.failures[key]
	delete(q.failures, key)
	return f
}

// Enqueue adds obj's key (KeyOf).
func (q *Queue) Enqueue(obj metav1.Object) { q.Add(KeyOf(obj)) }

// EnqueueSelecting adds to q the key of each object list returns (a
// lister's List) whose label selector, selectorOf it, is valid, not empty
// and selects lbls: the controllers that might adopt an orphan so labelled.
func EnqueueSelecting[T metav1.Object](q *Queue, list func(labels.Selector) ([]T, error),
	selectorOf func(T) *metav1.LabelSelector, lbls map[string]string) {
	owners, err := list(labels.Everything())
	if err != nil {
		return
	}
	for _, o := range owners {
		sel, err := metav1.LabelSelectorAsSelector(selectorOf(o))
		if err == nil && !sel.Empty() && sel.Matches(labels.Set(lbls)) {
			q.Enqueue(o)
		}
	}
}

// KeyOf is obj's queue key, "namespace/name".
func KeyOf(obj metav1.Object) string { return obj.GetNamespace() + "/" + obj.GetName() }

// Unwrap returns the object of an informer notification: obj itself, or the
// last known state a cache.DeletedFinalStateUnknown carries.
func Unwrap(obj interface{}) interface{} {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}
