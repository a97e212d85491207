package sched

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
	schedfw "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

// framework wraps a profile's framework to see what no plugin can: every
// node's filter verdict, every score, and where each attempt ends.
type framework struct {
	schedfw.Framework
	h *Hooks
}

// RunPreFilterPlugins begins a scheduling attempt: the schedule span starts,
// and the fault the pod's gate returned, if any, is put in the cycle state
// for the PodTrace plugin's Filter.
func (w *framework) RunPreFilterPlugins(ctx context.Context, state fwk.CycleState, pod *v1.Pod) (*fwk.PreFilterResult, *fwk.Status, sets.Set[string]) {
	h := w.h
	h.mu.Lock()
	ps := h.stateLocked(pod)
	ps.pod = pod
	ps.attempts++
	n, f := ps.attempts, ps.fault
	ps.passed, ps.fault, ps.faulted, ps.binding = false, nil, f, false
	h.mu.Unlock()

	if f != nil {
		state.Write(faultKey, &faultState{fault: *f, rejection: rejectionFor(*f)})
	}
	a := &attempt{recording: true}
	a.span = h.tr.BeginWith(refOf(pod, ""), stages.Schedule, Component, func(e *stages.Event) {
		e.Attempt, e.User = n, User
	})
	state.Write(attemptKey, a)
	h.mu.Lock()
	ps.cur = a
	h.mu.Unlock()
	return w.Framework.RunPreFilterPlugins(ctx, state, pod)
}

// RunFilterPluginsWithNominatedPods records the node's verdict. A rejection
// by an injected fault is credited to the upstream plugin it stands for.
func (w *framework) RunFilterPluginsWithNominatedPods(ctx context.Context, state fwk.CycleState, pod *v1.Pod, info fwk.NodeInfo) *fwk.Status {
	st := w.Framework.RunFilterPluginsWithNominatedPods(ctx, state, pod, info)
	if st.IsRejected() && st.Plugin() == PluginName {
		if fs := faultOf(state); fs != nil {
			st.SetPlugin(fs.rejection.plugin)
		}
	}
	if a := attemptOf(state); a != nil {
		a.filtered(info.Node().Name, st)
	}
	return st
}

// RunScorePlugins records the scores of the feasible nodes.
func (w *framework) RunScorePlugins(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) ([]fwk.NodePluginScores, *fwk.Status) {
	res, st := w.Framework.RunScorePlugins(ctx, state, pod, nodes)
	if a := attemptOf(state); a != nil && st.IsSuccess() {
		a.scores(res)
	}
	return res, st
}

// RunPostFilterPlugins records every node's verdict of an attempt where none
// fit, before preemption filters the nodes again.
func (w *framework) RunPostFilterPlugins(ctx context.Context, state fwk.CycleState, pod *v1.Pod, statuses fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	if a := attemptOf(state); a != nil {
		a.stop()
		if nodes, err := w.SnapshotSharedLister().NodeInfos().List(); err == nil {
			a.noFit(statuses, nodes)
		}
	}
	return w.Framework.RunPostFilterPlugins(ctx, state, pod, statuses)
}

// RunReservePluginsReserve ends the schedule span successfully once the pod
// is assumed on its node and reserved there.
func (w *framework) RunReservePluginsReserve(ctx context.Context, state fwk.CycleState, pod *v1.Pod, node string) *fwk.Status {
	st := w.Framework.RunReservePluginsReserve(ctx, state, pod, node)
	if !st.IsSuccess() {
		return st
	}
	h := w.h
	h.mu.Lock()
	ps := h.stateLocked(pod)
	ps.binding, ps.node, ps.cur, ps.faulted = true, node, nil, nil
	h.mu.Unlock()
	if a := attemptOf(state); a != nil {
		a.stop()
		res, evaluated, feasible := a.result(node)
		a.span.With(func(e *stages.Event) { e.Node, e.Scheduling = node, res }).
			Succeed("", fmt.Sprintf("picked %s: %d of %d nodes evaluated were feasible", node, feasible, evaluated))
	}
	return st
}

// AddWaitingPod starts the bind gate of a pod the PodTrace plugin made wait
// at Permit, now that the waiting pod exists to be allowed.
func (w *framework) AddWaitingPod(pod *v1.Pod, waits map[string]time.Duration) {
	w.Framework.AddWaitingPod(pod, waits)
	if _, ok := waits[PluginName]; ok {
		w.h.startBindGate(w.Framework, pod)
	}
}

// RunPreBindPlugins starts the bind span.
func (w *framework) RunPreBindPlugins(ctx context.Context, state fwk.CycleState, pod *v1.Pod, node string) *fwk.Status {
	h := w.h
	h.mu.Lock()
	ps := h.stateLocked(pod)
	n := ps.attempts
	h.mu.Unlock()
	span := h.tr.BeginWith(refOf(pod, node), stages.Bind, Component, func(e *stages.Event) {
		e.Attempt, e.User, e.Verb = n, User, "create"
	})
	h.mu.Lock()
	ps.bind = span
	h.mu.Unlock()
	return w.Framework.RunPreBindPlugins(ctx, state, pod, node)
}

// RunBindPlugins ends the bind span with upstream's Scheduled event once
// pods/binding succeeded, and forgets the pod.
func (w *framework) RunBindPlugins(ctx context.Context, state fwk.CycleState, pod *v1.Pod, node string) *fwk.Status {
	st := w.Framework.RunBindPlugins(ctx, state, pod, node)
	if !st.IsSuccess() {
		return st
	}
	h := w.h
	h.mu.Lock()
	var span *trace.Span
	if ps := h.pods[pod.UID]; ps != nil {
		span = ps.bind
	}
	h.mu.Unlock()
	if span == nil {
		span = h.tr.BeginWith(refOf(pod, node), stages.Bind, Component, func(e *stages.Event) { e.User, e.Verb = User, "create" })
	}
	span.Succeed("Scheduled", fmt.Sprintf("Successfully assigned %v/%v to %v", pod.Namespace, pod.Name, node))
	h.forget(pod.UID)
	return st
}

// failed ends the attempt the scheduler's FailureHandler is about to handle:
// the schedule span before Reserve, the bind span after, with upstream's
// FailedScheduling message. The stage is retrying when the pod goes back to
// the queue, failed when it is gone or was bound meanwhile.
func (h *Hooks) failed(f schedfw.Framework, pi *schedfw.QueuedPodInfo, st *fwk.Status) {
	pod := pi.Pod
	cur, err := f.SharedInformerFactory().Core().V1().Pods().Lister().Pods(pod.Namespace).Get(pod.Name)
	requeued := err == nil && cur.UID == pod.UID && cur.Spec.NodeName == ""

	h.mu.Lock()
	ps := h.pods[pod.UID]
	if ps == nil {
		h.mu.Unlock()
		return
	}
	binding, a, span, node, faulted := ps.binding, ps.cur, ps.bind, ps.node, ps.faulted
	ps.binding, ps.cur, ps.bind = false, nil, nil
	ps.bindGate, ps.bindFault = gateNone, nil
	if ps.bindCancel != nil {
		ps.bindCancel()
		ps.bindCancel = nil
	}
	h.mu.Unlock()

	end := func(s *trace.Span) {
		msg := st.Message()
		if !requeued {
			s.Fail("FailedScheduling", msg)
			return
		}
		var next time.Time
		if !st.IsRejected() {
			// Errors go to the back-off queue: upstream's default back-off.
			next = time.Now().Add(flakeRetry(pi.Attempts))
		}
		s.Retry("FailedScheduling", msg, next)
	}
	switch {
	case binding:
		if span == nil {
			span = h.tr.BeginWith(refOf(pod, node), stages.Bind, Component, func(e *stages.Event) {
				e.Attempt, e.User, e.Verb = pi.Attempts, User, "create"
			})
		}
		end(span)
	case a != nil:
		a.stop()
		res, _, _ := a.result("")
		end(a.span.With(func(e *stages.Event) { e.Scheduling = res }))
	}

	if !requeued {
		h.forget(pod.UID)
		return
	}
	if !binding && faulted != nil && faulted.Kind == stages.Flake {
		uid := pod.UID
		time.AfterFunc(flakeRetry(pi.Attempts), func() {
			h.mu.Lock()
			run := h.run
			h.mu.Unlock()
			if run != nil && run.Err() == nil {
				h.activate(run, func(ps *podState) bool { return ps.pod.UID == uid && ps.cur == nil })
			}
		})
	}
}
