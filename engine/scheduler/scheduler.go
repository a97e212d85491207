// Package scheduler is podtrace's kube-scheduler: it watches pending pods and
// nodes through client-go informers, runs the framework's filter and score
// plugins over a snapshot of the nodes, assumes the pod on the best node and
// binds it asynchronously through pods/binding. Failures give the exact
// kube-scheduler 1.36.3 FailedScheduling message, event and PodScheduled
// condition; every attempt is reported as schedule and bind stage events with
// the per-node, per-plugin verdicts.
//
// Behaviour worth knowing, beside upstream's:
//
//   - Pods wait in a queue with active, back-off (1 s doubling to 10 s) and
//     unschedulable sub-queues. An unschedulable pod is tried again when a
//     node is added or changes (not on heartbeats), when an assigned pod is
//     deleted or finishes, or at the latest after 5 minutes; a retrying
//     schedule event's NextTry is that latest time. Errors and injected
//     faults retry with back-off; NextTry is the back-off's end.
//   - Filters stop at the first rejecting plugin per node, in upstream's
//     order; on clusters of 100 nodes or more the search stops once enough
//     feasible nodes are found (upstream's adaptive percentageOfNodesToScore).
//   - Equal best scores are broken at random, with a generator seeded by
//     Config.Seed: the same seed and the same sequence of events pick the
//     same nodes.
//   - Preemption (DefaultPreemption) runs its dry run exactly enough to give
//     upstream's "preemption: ..." sentence; when victims exist it deletes
//     them (with the Preempted event) and sets status.nominatedNodeName,
//     but nominated pods do not reserve room on their node, and PDBs are
//     not considered.
//   - Each popped pod passes its schedule Gate in its own goroutine, so one
//     pod held at a breakpoint or hanging does not stop the others; at most
//     Config.Parallelism pods are popped and waiting at once.
package scheduler

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/podtrace/podtrace/engine/scheduler/cache"
	"github.com/podtrace/podtrace/engine/scheduler/framework"
	"github.com/podtrace/podtrace/engine/scheduler/queue"
	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

// Identity and defaults.
const (
	// Component is the event source and stage component.
	Component = "default-scheduler"
	// DefaultSchedulerName is the spec.schedulerName this scheduler serves.
	DefaultSchedulerName = "default-scheduler"
	// User is the scheduler's identity (docs/architecture.md).
	User = "system:kube-scheduler"
	// DefaultParallelism is upstream's default parallelism for filters and scores.
	DefaultParallelism = 16
	// DefaultBindConcurrency bounds the binding calls in flight.
	DefaultBindConcurrency = 64
)

// Config configures a Scheduler.
type Config struct {
	// Client talks to the API server as system:kube-scheduler.
	Client kubernetes.Interface
	// Clock drives back-offs, flushes and timestamps; real time when nil.
	Clock clock.WithTicker
	// Tracer receives schedule and bind stage events and gates both stages; may be nil.
	Tracer *trace.Tracer
	// Parallelism bounds concurrent Filter and Score calls; 16 when zero.
	// No more workers than GOMAXPROCS are started: the calls are CPU-bound.
	Parallelism int
	// BindConcurrency bounds concurrent pods/binding calls; 64 when zero.
	BindConcurrency int
	// Seed seeds the random choice among equally scored nodes; runs with the
	// same seed and the same event order pick the same nodes.
	Seed uint64
	// Registry and Plugins replace the default plugins and profile when set.
	Registry framework.Registry
	Plugins  []framework.PluginConfig
	// PercentageOfNodesToScore is upstream's knob: 0 means adaptive
	// (50% − nodes/125, at least 5%, at least 100 nodes).
	PercentageOfNodesToScore int32
	// Queue back-off and flush durations; zero means upstream's defaults (1 s, 10 s, 5 min).
	PodInitialBackoff, PodMaxBackoff, PodMaxInUnschedulablePods time.Duration
	// Recorder records core/v1 Events; when nil one is built on Client with source default-scheduler.
	Recorder record.EventRecorder
}

// Scheduler is the scheduler. Create it with New, run it with Start.
type Scheduler struct {
	cfg       Config
	clock     clock.WithTicker
	fwk       *framework.Framework
	queue     *queue.Queue
	cache     *cache.Cache
	snapshot  *cache.Snapshot
	recorder  record.EventRecorder
	podLister corelisters.PodLister
	rand      *rand.Rand
	bindSem   chan struct{}
	popSem    chan struct{}
	ready     chan gated

	nextStartNodeIndex int
	filterBufs         filterBufs
	// workers is the number of goroutines filters and scores run on.
	workers int

	mu   sync.Mutex
	last map[string]*stages.SchedulingResult
}

// New checks cfg and builds the framework; Start runs the scheduler.
func New(cfg Config) (*Scheduler, error) {
	if cfg.Client == nil {
		return nil, errors.New("scheduler: no client")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Parallelism <= 0 {
		cfg.Parallelism = DefaultParallelism
	}
	if cfg.BindConcurrency <= 0 {
		cfg.BindConcurrency = DefaultBindConcurrency
	}
	if cfg.Registry == nil {
		cfg.Registry = DefaultRegistry()
	}
	if cfg.Plugins == nil {
		cfg.Plugins = DefaultPlugins()
	}
	s := &Scheduler{
		cfg:      cfg,
		clock:    cfg.Clock,
		cache:    cache.New(),
		snapshot: cache.NewSnapshot(),
		rand:     rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5eed)),
		bindSem:  make(chan struct{}, cfg.BindConcurrency),
		popSem:   make(chan struct{}, cfg.Parallelism),
		ready:    make(chan gated, cfg.Parallelism),
		last:     map[string]*stages.SchedulingResult{},
		queue: queue.New(queue.Config{Clock: cfg.Clock, PodInitialBackoff: cfg.PodInitialBackoff,
			PodMaxBackoff: cfg.PodMaxBackoff, PodMaxInUnschedulablePods: cfg.PodMaxInUnschedulablePods}),
	}
	s.workers = min(cfg.Parallelism, runtime.GOMAXPROCS(0))
	fwk, err := framework.New(cfg.Registry, cfg.Plugins, s.workers, s.snapshot.List)
	if err != nil {
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	s.fwk = fwk
	return s, nil
}

// Start starts the informers, waits for their caches, and launches the
// queue, the scheduling loop and its binding goroutines; they stop when ctx
// is done.
func (s *Scheduler) Start(ctx context.Context) error {
	factory := informers.NewSharedInformerFactory(s.cfg.Client, 0)
	podInformer := factory.Core().V1().Pods()
	nodeInformer := factory.Core().V1().Nodes()
	s.podLister = podInformer.Lister()
	if _, err := podInformer.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: s.addPod, UpdateFunc: s.updatePod, DeleteFunc: s.deletePod,
	}); err != nil {
		return fmt.Errorf("scheduler: watch pods: %w", err)
	}
	if _, err := nodeInformer.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: s.addNode, UpdateFunc: s.updateNode, DeleteFunc: s.deleteNode,
	}); err != nil {
		return fmt.Errorf("scheduler: watch nodes: %w", err)
	}
	s.recorder = s.cfg.Recorder
	if s.recorder == nil {
		s.recorder = newRecorder(ctx, s.cfg.Client, s.clock)
	}
	factory.Start(ctx.Done())
	if !toolscache.WaitForCacheSync(ctx.Done(), podInformer.Informer().HasSynced, nodeInformer.Informer().HasSynced) {
		return fmt.Errorf("scheduler: wait for caches: %w", context.Cause(ctx))
	}
	go s.queue.Run(ctx)
	go s.popLoop(ctx)
	go s.scheduleLoop(ctx)
	return nil
}

func newRecorder(ctx context.Context, client kubernetes.Interface, clk clock.PassiveClock) record.EventRecorder {
	b := record.NewBroadcaster(record.WithContext(ctx), record.WithCorrelatorOptions(record.CorrelatorOptions{Clock: clk}))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	go func() {
		<-ctx.Done()
		b.Shutdown()
	}()
	return b.NewRecorder(scheme.Scheme, v1.EventSource{Component: Component})
}

// LastAttempt returns the verdicts of the pod's latest scheduling attempt.
func (s *Scheduler) LastAttempt(namespace, name string) (*stages.SchedulingResult, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.last[namespace+"/"+name]
	return r, ok
}

func (s *Scheduler) setLast(pod *v1.Pod, r *stages.SchedulingResult) {
	s.mu.Lock()
	s.last[pod.Namespace+"/"+pod.Name] = r
	s.mu.Unlock()
}

// responsible reports whether the pod is pending for this scheduler. Pods
// with scheduling gates wait outside the queue until the gates are removed
// (the API server sets their SchedulingGated condition).
func responsible(pod *v1.Pod) bool {
	if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil || terminal(pod) || len(pod.Spec.SchedulingGates) > 0 {
		return false
	}
	return pod.Spec.SchedulerName == "" || pod.Spec.SchedulerName == DefaultSchedulerName
}

func terminal(pod *v1.Pod) bool {
	return pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed
}

func podOf(obj any) *v1.Pod {
	switch t := obj.(type) {
	case *v1.Pod:
		return t
	case toolscache.DeletedFinalStateUnknown:
		p, _ := t.Obj.(*v1.Pod)
		return p
	}
	return nil
}

func (s *Scheduler) addPod(obj any) {
	pod := podOf(obj)
	switch {
	case pod == nil:
	case pod.Spec.NodeName != "":
		if !terminal(pod) {
			s.cache.AddPod(pod)
		}
	case responsible(pod):
		s.queue.Add(pod)
	}
}

func (s *Scheduler) updatePod(oldObj, newObj any) {
	old, pod := podOf(oldObj), podOf(newObj)
	if old == nil || pod == nil {
		return
	}
	switch {
	case pod.Spec.NodeName != "":
		if old.Spec.NodeName == "" {
			s.queue.Delete(pod)
		}
		if terminal(pod) {
			if s.cache.RemovePod(pod) { // a finished pod frees its node
				s.queue.MoveAllToActiveOrBackoff()
			}
		} else {
			s.cache.AddPod(pod)
		}
	case responsible(pod):
		s.queue.Update(old, pod)
	default:
		s.queue.Delete(pod)
	}
}

func (s *Scheduler) deletePod(obj any) {
	pod := podOf(obj)
	if pod == nil {
		return
	}
	s.mu.Lock()
	delete(s.last, pod.Namespace+"/"+pod.Name)
	s.mu.Unlock()
	if pod.Spec.NodeName != "" {
		if s.cache.RemovePod(pod) {
			s.queue.MoveAllToActiveOrBackoff()
		}
		return
	}
	s.queue.Delete(pod)
}

func nodeOf(obj any) *v1.Node {
	switch t := obj.(type) {
	case *v1.Node:
		return t
	case toolscache.DeletedFinalStateUnknown:
		n, _ := t.Obj.(*v1.Node)
		return n
	}
	return nil
}

func (s *Scheduler) addNode(obj any) {
	if n := nodeOf(obj); n != nil {
		s.cache.AddNode(n)
		s.queue.MoveAllToActiveOrBackoff()
	}
}

func (s *Scheduler) updateNode(oldObj, newObj any) {
	old, n := nodeOf(oldObj), nodeOf(newObj)
	if n == nil {
		return
	}
	s.cache.UpdateNode(n)
	// Heartbeats (status conditions, times) change nothing the plugins read.
	if old == nil || !equality.Semantic.DeepEqual(old.Spec, n.Spec) || !equality.Semantic.DeepEqual(old.Labels, n.Labels) ||
		!equality.Semantic.DeepEqual(old.Status.Allocatable, n.Status.Allocatable) {
		s.queue.MoveAllToActiveOrBackoff()
	}
}

func (s *Scheduler) deleteNode(obj any) {
	if n := nodeOf(obj); n != nil {
		s.cache.RemoveNode(n.Name)
	}
}
