// Package sched is podtrace's seam in the real kube-scheduler
// (k8s.io/kubernetes/pkg/scheduler): an out-of-tree plugin, PodTrace, enabled
// at every extension point it implements, and a wrapper around each profile's
// framework.Framework.
//
// The wrapper reports the schedule and bind stages as stages.Events: an
// attempt starts at RunPreFilterPlugins, every node's filter verdict and every
// score plugin's score are recorded (no plugin can see those), the attempt
// succeeds at Reserve and fails through the scheduler's FailureHandler with
// upstream's own FailedScheduling message.
//
// The plugin is where faults and breakpoints act, each at the point where
// upstream would produce the same consequence:
//
//   - schedule breakpoint: PreEnqueue keeps the pod out of the active queue (as
//     a scheduling gate does) while trace.Gate runs in a goroutine of its own;
//     when the gate opens the pod is activated. The scheduler's own goroutine
//     never waits on a breakpoint, a delay or a hang.
//   - schedule fault: the gate's fault is carried in the CycleState and Filter
//     rejects every node with the reason the upstream plugin gives (NodeResourcesFit's
//     "Insufficient cpu", ...), so the FailedScheduling message, the
//     preemption sentence and the requeueing are upstream's.
//   - bind breakpoint: Permit returns Wait; a goroutine runs the gate and then
//     allows the waiting pod.
//   - bind fault: PreBind fails with the apiserver's 409 for pods/binding, and
//     the binding cycle's error handling (unreserve, back-off) is upstream's.
package sched

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/pkg/scheduler"
	schedfw "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

// PluginName is the name the PodTrace plugin is registered and enabled under.
const PluginName = "PodTrace"

// Component is the scheduler's event source and the component of its stage
// events.
const Component = "default-scheduler"

// User is the scheduler's identity.
const User = "system:kube-scheduler"

// Hooks is podtrace's seam in kube-scheduler: an out-of-tree plugin enabled at
// every extension point, and a framework wrapper. Register the plugin with
// Option before app.Setup and call Wrap on the scheduler it returns, before
// app.Run.
type Hooks struct {
	tr *trace.Tracer

	mu   sync.Mutex
	pods map[types.UID]*podState
	// run is the scheduler's context (the plugin factory's); activator is
	// the scheduling queue, reached through a framework handle.
	run       context.Context
	activator fwk.PodActivator
}

// podState is what the hooks keep of one pod between its scheduling
// attempts; it is forgotten when the pod is bound or deleted.
type podState struct {
	pod    *v1.Pod
	ctx    context.Context // the pod's gates; cancelled when forgotten
	cancel context.CancelFunc

	attempts int
	// gating: a schedule gate runs for the pod and PreEnqueue holds it.
	// passed: the gate has opened for the next attempt, with fault.
	gating, passed bool
	fault          *stages.Fault
	// faulted is the fault that failed the latest attempt.
	faulted *stages.Fault

	cur     *attempt // the scheduling attempt under way
	binding bool     // past Reserve: failures belong to the bind stage
	node    string
	bind    *trace.Span

	bindGate   gateState
	bindFault  *stages.Fault
	bindCancel context.CancelFunc
}

// gateState is where a pod's bind gate stands.
type gateState int

const (
	gateNone    gateState = iota
	gateWaiting           // Permit returned Wait; the gate runs
	gateOpen              // the gate returned; bindFault holds its fault
)

// New returns hooks that report to tr (nil reports nothing and injects
// nothing).
func New(tr *trace.Tracer) *Hooks {
	return &Hooks{tr: tr, pods: map[types.UID]*podState{}}
}

// Option registers the PodTrace plugin with kube-scheduler
// (app.WithPlugin(PluginName, factory)). The profile must enable it, at
// multiPoint.
func (h *Hooks) Option() app.Option {
	return app.WithPlugin(PluginName, h.newPlugin)
}

// newPlugin is the plugin factory; every profile gets its own instance.
func (h *Hooks) newPlugin(ctx context.Context, _ runtime.Object, handle fwk.Handle) (fwk.Plugin, error) {
	h.mu.Lock()
	first := h.run != ctx
	var stale map[types.UID]*podState
	if first {
		// A new scheduler run (every profile's plugin shares its context):
		// what was kept for the previous one is gone with its queue.
		h.run, h.activator = ctx, handle
		stale, h.pods = h.pods, map[types.UID]*podState{}
	}
	h.mu.Unlock()
	for _, ps := range stale {
		ps.cancel()
	}
	if first {
		// The scheduler's own pod informer: no watch of podtrace's.
		_, err := handle.SharedInformerFactory().Core().V1().Pods().Informer().AddEventHandler(
			cache.ResourceEventHandlerFuncs{DeleteFunc: h.podDeleted})
		if err != nil {
			return nil, err
		}
		if h.tr != nil {
			go h.watchFaults(ctx)
		}
	}
	return &plugin{h: h, handle: handle}, nil
}

// Wrap wraps every profile's framework.Framework with the recording wrapper
// and the scheduler's FailureHandler, which reports failed attempts with the
// message upstream records in its FailedScheduling event.
func (h *Hooks) Wrap(s *scheduler.Scheduler) {
	for name, f := range s.Profiles {
		if _, done := f.(*framework); !done {
			s.Profiles[name] = &framework{Framework: f, h: h}
		}
	}
	handle := s.FailureHandler
	s.FailureHandler = func(ctx context.Context, f schedfw.Framework, pi *schedfw.QueuedPodInfo, st *fwk.Status,
		ni *fwk.NominatingInfo, start time.Time) {
		h.failed(f, pi, st)
		handle(ctx, f, pi, st, ni, start)
	}
}

// Tracked returns how many pods the hooks keep state for: pods not yet bound
// and not deleted that the scheduler has seen while faults or breakpoints
// were set, or has tried to schedule.
func (h *Hooks) Tracked() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.pods)
}

func refOf(pod *v1.Pod, node string) trace.Ref {
	return trace.Ref{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID), Node: node}
}

// stateLocked returns the pod's state, creating it; h.mu is held.
func (h *Hooks) stateLocked(pod *v1.Pod) *podState {
	ps := h.pods[pod.UID]
	if ps == nil {
		base := h.run
		if base == nil {
			base = context.Background()
		}
		ps = &podState{pod: pod}
		ps.ctx, ps.cancel = context.WithCancel(base)
		h.pods[pod.UID] = ps
	}
	return ps
}

// forget drops the pod's state and stops its gates.
func (h *Hooks) forget(uid types.UID) {
	h.mu.Lock()
	ps := h.pods[uid]
	delete(h.pods, uid)
	h.mu.Unlock()
	if ps != nil {
		ps.cancel()
	}
}

func (h *Hooks) podDeleted(obj any) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		if d, isTomb := obj.(cache.DeletedFinalStateUnknown); isTomb {
			pod, ok = d.Obj.(*v1.Pod)
		}
	}
	if ok {
		h.forget(pod.UID)
	}
}

// mayGate reports whether a gate at stage could hold or break the pod. It
// errs on the side of gating: any breakpoint may be a pod stepping from one
// stage to the next.
func (h *Hooks) mayGate(stage stages.ID, ref trace.Ref) bool {
	if !h.tr.Armed() {
		return false
	}
	if len(h.tr.Breaks.List()) > 0 || h.tr.Paused() {
		return true
	}
	fs := h.tr.Faults.List()
	if len(fs) == 0 {
		return true // armed by a pod stepping through its stages
	}
	for _, f := range fs {
		if f.Stage == stage && f.Scope.Matches(ref.Key(), ref.Node) {
			return true
		}
	}
	return false
}

// watchFaults re-activates the pods a schedule fault left unschedulable
// whenever the faults change, as a cluster event would: a removed fault
// lets them schedule.
func (h *Hooks) watchFaults(ctx context.Context) {
	changed := h.tr.Faults.Changed()
	for {
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
		changed = h.tr.Faults.Changed()
		h.activate(ctx, func(ps *podState) bool { return ps.faulted != nil && ps.cur == nil && !ps.binding })
	}
}

// ActivatePending moves every pod that waits for the scheduler's retry
// (unschedulable, or backing off after a failed attempt) to the active
// queue, as a cluster event that might make them schedulable would, and
// returns how many: the fast-forward key. Pods held at a breakpoint stay
// held.
func (h *Hooks) ActivatePending(ctx context.Context) int {
	return h.activate(ctx, func(ps *podState) bool { return ps.cur == nil && !ps.binding && !ps.gating && ps.attempts > 0 })
}

// activate moves the pods whose state matches to the active queue and
// returns how many.
func (h *Hooks) activate(ctx context.Context, match func(*podState) bool) int {
	pods := map[string]*v1.Pod{}
	h.mu.Lock()
	act := h.activator
	for _, ps := range h.pods {
		if match(ps) {
			pods[ps.pod.Namespace+"/"+ps.pod.Name] = ps.pod
		}
	}
	h.mu.Unlock()
	if len(pods) == 0 || act == nil {
		return 0
	}
	act.Activate(klog.FromContext(ctx), pods)
	return len(pods)
}

// flakeRetry is when a pod failed by a flake fault is tried again: the
// scheduler's default back-off (1 s doubling to 10 s), as a flaking plugin
// would be retried once the cluster changed.
func flakeRetry(attempts int) time.Duration {
	d := time.Second
	for i := 1; i < attempts && d < 10*time.Second; i++ {
		d *= 2
	}
	return min(d, 10*time.Second)
}
