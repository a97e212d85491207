package sched

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

// heldMessage is PreEnqueue's status while a pod's schedule gate runs.
const heldMessage = "held by podtrace breakpoint"

// maxPermitWait is the longest a Permit plugin may make a pod wait; the
// framework caps it at 15 minutes.
const maxPermitWait = 15 * time.Minute

// plugin is the PodTrace scheduler plugin; one instance per profile.
type plugin struct {
	h      *Hooks
	handle fwk.Handle
}

var (
	_ fwk.PreEnqueuePlugin  = (*plugin)(nil)
	_ fwk.EnqueueExtensions = (*plugin)(nil)
	_ fwk.PreFilterPlugin   = (*plugin)(nil)
	_ fwk.FilterPlugin      = (*plugin)(nil)
	_ fwk.PermitPlugin      = (*plugin)(nil)
	_ fwk.PreBindPlugin     = (*plugin)(nil)
)

// Name returns PluginName.
func (p *plugin) Name() string { return PluginName }

// PreEnqueue lets the pod into the active queue once its schedule gate has
// opened. When a fault or breakpoint could apply, it holds the pod as a
// scheduling gate does and runs the gate in a goroutine of its own, which
// activates the pod when it returns. PreEnqueue runs under the queue's lock:
// it never waits.
func (p *plugin) PreEnqueue(_ context.Context, pod *v1.Pod) *fwk.Status {
	h := p.h
	h.mu.Lock()
	if ps := h.pods[pod.UID]; ps != nil {
		switch {
		case ps.passed:
			h.mu.Unlock()
			return nil
		case ps.gating:
			ps.pod = pod
			h.mu.Unlock()
			return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, heldMessage)
		}
	}
	h.mu.Unlock()
	ref := refOf(pod, "")
	if !h.mayGate(stages.Schedule, ref) {
		return nil
	}
	h.mu.Lock()
	ps := h.stateLocked(pod)
	ps.pod, ps.gating = pod, true
	ctx := ps.ctx
	h.mu.Unlock()
	go p.gateSchedule(ctx, pod.UID, ref)
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, heldMessage)
}

// gateSchedule runs the schedule gate (breakpoint, delay, hang, fault) and
// activates the pod with the gate's outcome kept for its next attempt.
func (p *plugin) gateSchedule(ctx context.Context, uid types.UID, ref trace.Ref) {
	f, err := p.h.tr.Gate(ctx, ref, stages.Schedule, Component)
	h := p.h
	h.mu.Lock()
	ps := h.pods[uid]
	if ps == nil || ps.ctx != ctx {
		h.mu.Unlock()
		return // forgotten meanwhile
	}
	ps.gating = false
	if err != nil {
		h.mu.Unlock()
		return
	}
	ps.passed, ps.fault = true, f
	pod := ps.pod
	h.mu.Unlock()
	p.handle.Activate(klog.FromContext(ctx), map[string]*v1.Pod{ref.Key(): pod})
}

// EventsToRegister registers no cluster event: the hooks activate the pods
// they hold or fail themselves, when a gate opens or the faults change.
func (p *plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return nil, nil
}

// PreFilter skips the plugin's Filter unless the attempt carries a fault.
func (p *plugin) PreFilter(_ context.Context, state fwk.CycleState, _ *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if faultOf(state) == nil {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	return nil, nil
}

// PreFilterExtensions returns nil: the plugin keeps no per-node state.
func (p *plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// Filter rejects every node with the fault's reason, as the upstream plugin
// it stands for would.
func (p *plugin) Filter(_ context.Context, state fwk.CycleState, _ *v1.Pod, _ fwk.NodeInfo) *fwk.Status {
	fs := faultOf(state)
	if fs == nil {
		return nil
	}
	return fwk.NewStatus(fs.rejection.code, fs.rejection.reason)
}

// Permit makes the pod wait when a bind gate could apply; the framework
// wrapper starts the gate once the waiting pod exists (AddWaitingPod) and
// allows it when the gate opens.
func (p *plugin) Permit(_ context.Context, _ fwk.CycleState, pod *v1.Pod, node string) (*fwk.Status, time.Duration) {
	if !p.h.mayGate(stages.Bind, refOf(pod, node)) {
		return nil, 0
	}
	h := p.h
	h.mu.Lock()
	ps := h.stateLocked(pod)
	ps.bindGate, ps.bindFault, ps.node = gateWaiting, nil, node
	h.mu.Unlock()
	return fwk.NewStatus(fwk.Wait, "waiting for podtrace's bind gate"), maxPermitWait
}

// PreBindPreFlight says whether PreBind has anything to do: only for a pod
// whose bind gate still runs or returned a fault. (A PreBind that runs costs
// the scheduler a NominatedNodeName write.)
func (p *plugin) PreBindPreFlight(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) (*fwk.PreBindPreFlightResult, *fwk.Status) {
	p.h.mu.Lock()
	ps := p.h.pods[pod.UID]
	pending := ps != nil && (ps.bindGate == gateWaiting || ps.bindFault != nil)
	p.h.mu.Unlock()
	if !pending {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	return nil, nil
}

// PreBind fails the binding with the bind gate's fault: the apiserver's 409
// for a pods/binding that lost a race.
func (p *plugin) PreBind(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) *fwk.Status {
	h := p.h
	h.mu.Lock()
	var f *stages.Fault
	if ps := h.pods[pod.UID]; ps != nil {
		f = ps.bindFault
		ps.bindFault, ps.bindGate = nil, gateNone
	}
	h.mu.Unlock()
	if f == nil {
		return nil
	}
	return fwk.AsStatus(bindConflict(pod))
}

// startBindGate runs the bind gate for a pod waiting at Permit, then allows
// (or, when the gate was cancelled, rejects) the waiting pod.
func (h *Hooks) startBindGate(handle fwk.Handle, pod *v1.Pod) {
	h.mu.Lock()
	ps := h.pods[pod.UID]
	if ps == nil || ps.bindGate != gateWaiting {
		h.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(ps.ctx)
	ps.bindCancel = cancel
	node := ps.node
	h.mu.Unlock()
	go func() {
		defer cancel()
		f, err := h.tr.Gate(ctx, refOf(pod, node), stages.Bind, Component)
		h.mu.Lock()
		if ps := h.pods[pod.UID]; ps != nil && ps.bindGate == gateWaiting && err == nil {
			ps.bindGate, ps.bindFault = gateOpen, f
		}
		h.mu.Unlock()
		wp := handle.GetWaitingPod(pod.UID)
		if wp == nil {
			return
		}
		if err != nil {
			wp.Reject(PluginName, fmt.Sprintf("podtrace bind gate: %v", err))
			return
		}
		wp.Allow(PluginName)
	}()
}
