package scheduler

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/podtrace/podtrace/engine/scheduler/framework"
	"github.com/podtrace/podtrace/engine/scheduler/plugins/defaultpreemption"
	"github.com/podtrace/podtrace/engine/scheduler/plugins/dynamicresources"
	"github.com/podtrace/podtrace/engine/scheduler/plugins/names"
	"github.com/podtrace/podtrace/engine/scheduler/queue"
	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

// noteLengthLimit is the longest event message the API accepts.
const noteLengthLimit = 1024

func truncateMessage(m string) string {
	if len(m) <= noteLengthLimit {
		return m
	}
	const suffix = " ..."
	return m[:noteLengthLimit-len(suffix)] + suffix
}

// handleFailure ends a failed attempt as kube-scheduler does: the pod goes
// back to the queue (unschedulable, or back-off for errors and injected
// faults), a FailedScheduling Warning event is recorded and the PodScheduled
// condition is set to False with reason Unschedulable (or SchedulerError).
func (s *Scheduler) handleFailure(ctx context.Context, span *trace.Span, pi *queue.QueuedPodInfo, st *framework.Status,
	verdicts *stages.SchedulingResult, preempt *defaultpreemption.Result, backoff bool) {
	pod := pi.Pod
	msg := st.Message()
	reason := v1.PodReasonSchedulerError
	if st.IsRejected() {
		reason = v1.PodReasonUnschedulable
	}
	if verdicts != nil {
		s.setLast(pod, verdicts)
		span.With(func(e *stages.Event) { e.Scheduling = verdicts })
	}
	var next time.Time
	cur, err := s.podLister.Pods(pod.Namespace).Get(pod.Name)
	requeue := err == nil && cur.UID == pod.UID && cur.Spec.NodeName == ""
	if requeue {
		pi.PodInfo = framework.NewPodInfo(cur)
	}
	switch {
	case !requeue:
		s.queue.Done(pod.UID)
	case backoff || !st.IsRejected():
		next = s.queue.AddBackoff(pi)
	default:
		next = s.queue.AddUnschedulable(pi)
	}
	if requeue {
		span.Retry("FailedScheduling", msg, next)
	} else {
		span.Fail("FailedScheduling", msg)
	}
	s.recorder.Event(pod, v1.EventTypeWarning, "FailedScheduling", truncateMessage(msg))
	nominated := ""
	if preempt != nil {
		nominated = preempt.Node
	}
	if !requeue {
		return
	}
	go func() {
		if preempt != nil {
			s.evict(ctx, pod, preempt)
		}
		s.setCondition(ctx, pod, v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: reason, Message: msg}, nominated)
	}()
}

// setCondition writes the PodScheduled condition (and the nominated node)
// through pods/status, skipping the write when nothing would change.
func (s *Scheduler) setCondition(ctx context.Context, pod *v1.Pod, cond v1.PodCondition, nominated string) {
	_ = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := s.podLister.Pods(pod.Namespace).Get(pod.Name)
		if err != nil || cur.UID != pod.UID || cur.Spec.NodeName != "" {
			return nil
		}
		cur = cur.DeepCopy()
		if !updateCondition(&cur.Status, cond, metav1.NewTime(s.clock.Now())) && (nominated == "" || cur.Status.NominatedNodeName == nominated) {
			return nil
		}
		if nominated != "" {
			cur.Status.NominatedNodeName = nominated
		}
		_, err = s.cfg.Client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			// The informer may lag behind: read the latest version.
			if fresh, gerr := s.cfg.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{}); gerr == nil && fresh.UID == pod.UID && fresh.Spec.NodeName == "" {
				fresh = fresh.DeepCopy()
				updateCondition(&fresh.Status, cond, metav1.NewTime(s.clock.Now()))
				if nominated != "" {
					fresh.Status.NominatedNodeName = nominated
				}
				_, err = s.cfg.Client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, fresh, metav1.UpdateOptions{})
			}
		}
		return err
	})
}

// updateCondition sets cond in status like podutil.UpdatePodCondition: the
// transition time changes only with the status; it reports whether anything changed.
func updateCondition(status *v1.PodStatus, cond v1.PodCondition, now metav1.Time) bool {
	for i := range status.Conditions {
		old := &status.Conditions[i]
		if old.Type != cond.Type {
			continue
		}
		if old.Status == cond.Status && old.Reason == cond.Reason && old.Message == cond.Message {
			return false
		}
		cond.LastTransitionTime = old.LastTransitionTime
		if old.Status != cond.Status {
			cond.LastTransitionTime = now
		}
		*old = cond
		return true
	}
	cond.LastTransitionTime = now
	status.Conditions = append(status.Conditions, cond)
	return true
}

// evict deletes the preemption victims, with upstream's Preempted event.
// The preemptor is then retried when the victims' deletion frees the node.
func (s *Scheduler) evict(ctx context.Context, preemptor *v1.Pod, r *defaultpreemption.Result) {
	for _, victim := range r.Victims {
		err := s.cfg.Client.CoreV1().Pods(victim.Namespace).Delete(ctx, victim.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &victim.UID},
		})
		if err != nil && !apierrors.IsNotFound(err) {
			continue
		}
		s.recorder.Eventf(victim, v1.EventTypeNormal, "Preempted", "Preempted by pod %v on node %v", preemptor.UID, r.Node)
	}
}

// faultReasons maps an injected schedule fault's variant to the filter
// verdict every node gets: the plugin, its reason, and whether evicting pods
// could help (which decides the preemption sentence).
var faultReasons = map[string]struct {
	plugin, reason string
	resolvable     bool
}{
	"":              {names.NodeResourcesFit, "Insufficient cpu", true},
	"cpu":           {names.NodeResourcesFit, "Insufficient cpu", true},
	"memory":        {names.NodeResourcesFit, "Insufficient memory", true},
	"pods":          {names.NodeResourcesFit, "Too many pods", true},
	"ports":         {names.NodePorts, "node(s) didn't have free ports for the requested pod ports", true},
	"taint":         {names.TaintToleration, "node(s) had untolerated taint(s)", false},
	"selector":      {names.NodeAffinity, "node(s) didn't match Pod's node affinity/selector", false},
	"affinity":      {names.NodeAffinity, "node(s) didn't match Pod's node affinity/selector", false},
	"unschedulable": {names.NodeUnschedulable, "node(s) were unschedulable", false},
}

// FaultVariants lists the variants a schedule fault understands.
func FaultVariants() []string {
	return []string{"cpu", "memory", "pods", "ports", "taint", "selector", "affinity", "unschedulable"}
}

// faultFitError builds the FitError an injected schedule fault produces: every
// node rejected with the variant's reason, and the matching preemption sentence.
func faultFitError(pod *v1.Pod, nodes []*framework.NodeInfo, f *stages.Fault) (*framework.FitError, *stages.SchedulingResult) {
	fr, ok := faultReasons[f.Variant]
	if !ok {
		fr = faultReasons[""]
	}
	code, post := framework.UnschedulableAndUnresolvable, defaultpreemption.ErrReasonNotHelpful
	if fr.resolvable {
		code, post = framework.Unschedulable, defaultpreemption.ErrReasonNoVictims
	}
	d := framework.Diagnosis{NodeToStatus: map[string]*framework.Status{}}
	verdicts := &stages.SchedulingResult{}
	for _, ni := range nodes {
		d.NodeToStatus[ni.Node().Name] = framework.NewStatus(code, fr.reason).WithPlugin(fr.plugin)
		verdicts.Nodes = append(verdicts.Nodes, stages.NodeVerdict{Node: ni.Node().Name, Plugin: fr.plugin, Reason: fr.reason})
	}
	fe := &framework.FitError{Pod: pod, NumAllNodes: len(nodes), Diagnosis: d}
	if len(nodes) > 0 {
		fe.Diagnosis.PostFilterMsg = dynamicresources.ErrReasonNoClaims + ", preemption: " + (&framework.FitError{NumAllNodes: len(nodes), Diagnosis: framework.Diagnosis{
			AbsentNodesStatus: framework.NewStatus(framework.UnschedulableAndUnresolvable, post)}}).Error()
	}
	return fe, verdicts
}
