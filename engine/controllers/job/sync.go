package job

import (
	"context"
	"time"

	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/podtrace/podtrace/engine/controllers/controllerutil"
)

// syncJob brings one Job a step closer to done: it counts its finished
// pods, decides whether it has failed or succeeded, creates or deletes pods
// otherwise, and writes the status (upstream's syncJob).
func (c *Controller) syncJob(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	shared, err := c.jobLister.Jobs(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		c.expectations.Delete(key)
		return c.removeFinalizers(ctx, c.podsNamed(namespace, name, ""))
	}
	if err != nil {
		return err
	}
	// Pods of an earlier Job of the same name lose their finalizer.
	if err := c.removeFinalizers(ctx, c.podsNamed(namespace, name, shared.UID)); err != nil {
		return err
	}
	if m := shared.Spec.ManagedBy; m != nil && *m != managedBy {
		return nil
	}
	pods := c.podsOf(shared)
	if finished(shared) || shared.DeletionTimestamp != nil {
		return c.removeFinalizers(ctx, pods)
	}
	satisfied := c.expectations.Satisfied(key)
	j := shared.DeepCopy()
	now := c.clock.Now()
	if j.Status.StartTime == nil && !suspended(j) {
		j.Status.StartTime = &metav1.Time{Time: now}
	}
	if j.Status.UncountedTerminatedPods == nil {
		j.Status.UncountedTerminatedPods = &batch.UncountedTerminatedPods{}
	}
	release := c.countFinished(key, j, pods, now)
	active := controllerutil.FilterActivePods(pods)
	target := c.finishTarget(key, j, active, now)
	var manageErr error
	activeCount, deleted := len(active), 0
	if target != nil {
		// A finishing Job's remaining pods go.
		deleted, manageErr = c.deletePods(ctx, key, j, active)
		activeCount -= deleted
	} else {
		c.updateSuspended(j, now)
		if satisfied {
			activeCount, deleted, manageErr = c.manageJob(ctx, key, j, active, now)
		}
		target = successTarget(j, activeCount)
	}
	if target != nil {
		setCondition(j, target.Type, target.Status, target.Reason, target.Message, now)
	}
	setCounts(j, pods, active, activeCount, deleted)
	done := target != nil && satisfied && activeCount == 0 && *j.Status.Terminating == 0
	if err := c.writeStatus(ctx, shared, j, release, done, now); err != nil {
		return err
	}
	return manageErr
}

// podsOf returns the pods the Job controls.
func (c *Controller) podsOf(j *batch.Job) []*v1.Pod {
	all, _ := c.podLister.Pods(j.Namespace).List(labels.Everything())
	var out []*v1.Pod
	for _, p := range all {
		if ref := metav1.GetControllerOfNoCopy(p); ref != nil && ref.UID == j.UID {
			out = append(out, p)
		}
	}
	return out
}

// podsNamed returns the pods controlled by a Job called name other than the
// one with UID live (by any Job of that name when live is "").
func (c *Controller) podsNamed(namespace, name string, live types.UID) []*v1.Pod {
	all, _ := c.podLister.Pods(namespace).List(labels.Everything())
	var out []*v1.Pod
	for _, p := range all {
		if jobKeyOf(p) == namespace+"/"+name && metav1.GetControllerOfNoCopy(p).UID != live {
			out = append(out, p)
		}
	}
	return out
}

func suspended(j *batch.Job) bool { return j.Spec.Suspend != nil && *j.Spec.Suspend }

// podFailed reports whether a pod counts as failed: it failed, or it was
// deleted before it succeeded (podReplacementPolicy TerminatingOrFailed).
func podFailed(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodFailed || (p.DeletionTimestamp != nil && p.Status.Phase != v1.PodSucceeded)
}

// countFinished adds the finished pods not yet counted to the Job's
// uncountedTerminatedPods and its back-off record. It returns the pods to
// let go uncounted: those deleted while the Job is suspended.
func (c *Controller) countFinished(key string, j *batch.Job, pods []*v1.Pod, now time.Time) []*v1.Pod {
	u := j.Status.UncountedTerminatedPods
	var release []*v1.Pod
	succeeded, failedAt := 0, []time.Time{}
	for _, p := range pods {
		if !hasFinalizer(p) || c.finalizing.has(p.UID) || hasUID(u.Succeeded, p.UID) || hasUID(u.Failed, p.UID) {
			continue
		}
		switch {
		case p.Status.Phase == v1.PodSucceeded:
			u.Succeeded = append(u.Succeeded, p.UID)
			succeeded++
		case podFailed(p) && suspended(j) && p.Status.Phase != v1.PodFailed:
			release = append(release, p)
		case podFailed(p):
			u.Failed = append(u.Failed, p.UID)
			failedAt = append(failedAt, finishTime(p, now))
		}
	}
	if succeeded > 0 || len(failedAt) > 0 {
		c.backoff.observe(key, succeeded, failedAt)
	}
	return release
}

// finishTarget returns the condition a Job is finishing with: one it
// already has (SuccessCriteriaMet, FailureTarget), or FailureTarget when
// it has failed more than backoffLimit times or run past its deadline. It
// asks to sync again at the deadline otherwise.
func (c *Controller) finishTarget(key string, j *batch.Job, active []*v1.Pod, now time.Time) *batch.JobCondition {
	for _, t := range []batch.JobConditionType{batch.JobSuccessCriteriaMet, batch.JobFailureTarget} {
		if isTrue(j, t) {
			return condition(j, t).DeepCopy()
		}
	}
	failed := j.Status.Failed + int32(len(j.Status.UncountedTerminatedPods.Failed))
	if failed > *j.Spec.BackoffLimit || pastBackoffLimitOnFailure(j, active) {
		return failureTarget(batch.JobReasonBackoffLimitExceeded, msgBackoffLimit)
	}
	if d := j.Spec.ActiveDeadlineSeconds; d != nil && j.Status.StartTime != nil && !suspended(j) {
		left := time.Duration(*d)*time.Second - now.Sub(j.Status.StartTime.Time)
		if left <= 0 {
			return failureTarget(batch.JobReasonDeadlineExceeded, msgDeadline)
		}
		c.queue.AddAfter(key, left)
	}
	return nil
}

func failureTarget(reason, msg string) *batch.JobCondition {
	return &batch.JobCondition{Type: batch.JobFailureTarget, Status: v1.ConditionTrue, Reason: reason, Message: msg}
}

// pastBackoffLimitOnFailure counts the container restarts of a Job whose
// pods restart OnFailure against its backoffLimit, as upstream.
func pastBackoffLimitOnFailure(j *batch.Job, active []*v1.Pod) bool {
	if j.Spec.Template.Spec.RestartPolicy != v1.RestartPolicyOnFailure {
		return false
	}
	var restarts int32
	for _, p := range active {
		if p.Status.Phase != v1.PodRunning && p.Status.Phase != v1.PodPending {
			continue
		}
		for _, s := range append(append([]v1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			restarts += s.RestartCount
		}
	}
	if *j.Spec.BackoffLimit == 0 {
		return restarts > 0
	}
	return restarts >= *j.Spec.BackoffLimit
}

// successTarget returns SuccessCriteriaMet once enough pods succeeded and
// none is left running: completions of them, or any one when the Job has
// no completions.
func successTarget(j *batch.Job, active int) *batch.JobCondition {
	succeeded := j.Status.Succeeded + int32(len(j.Status.UncountedTerminatedPods.Succeeded))
	enough := succeeded > 0
	if j.Spec.Completions != nil {
		enough = succeeded >= *j.Spec.Completions
	}
	if !enough || active > 0 {
		return nil
	}
	return &batch.JobCondition{Type: batch.JobSuccessCriteriaMet, Status: v1.ConditionTrue,
		Reason: batch.JobReasonCompletionsReached, Message: msgCompletions}
}

// updateSuspended sets the Suspended condition from spec.suspend, with
// upstream's events; resuming restarts the deadline's clock.
func (c *Controller) updateSuspended(j *batch.Job, now time.Time) {
	if suspended(j) {
		if setCondition(j, batch.JobSuspended, v1.ConditionTrue, "JobSuspended", "Job suspended", now) {
			c.recorder.Event(j, v1.EventTypeNormal, "Suspended", "Job suspended")
		}
		return
	}
	if isTrue(j, batch.JobSuspended) && setCondition(j, batch.JobSuspended, v1.ConditionFalse, "JobResumed", "Job resumed", now) {
		c.recorder.Event(j, v1.EventTypeNormal, "Resumed", "Job resumed")
		j.Status.StartTime = &metav1.Time{Time: now}
	}
}

// setCounts fills in status.active, ready and terminating, counting the
// pods just deleted as terminating.
func setCounts(j *batch.Job, pods, active []*v1.Pod, activeCount, deleted int) {
	ready, terminating := int32(0), int32(deleted)
	for _, p := range active {
		if controllerutil.IsPodReady(p) {
			ready++
		}
	}
	for _, p := range pods {
		if p.DeletionTimestamp != nil && p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed {
			terminating++
		}
	}
	ready = min(ready, int32(activeCount))
	j.Status.Active, j.Status.Ready, j.Status.Terminating = int32(activeCount), &ready, &terminating
}

// writeStatus records the newly finished pods in uncountedTerminatedPods,
// removes their finalizers, moves them to succeeded and failed, and
// finishes the Job (Complete or Failed, with upstream's event) when done,
// writing the status only when it changed.
func (c *Controller) writeStatus(ctx context.Context, old, j *batch.Job, release []*v1.Pod, done bool, now time.Time) error {
	jobs := c.cfg.Client.BatchV1().Jobs(j.Namespace)
	u := j.Status.UncountedTerminatedPods
	if len(u.Succeeded)+len(u.Failed) > 0 {
		if !apiequality.Semantic.DeepEqual(u, old.Status.UncountedTerminatedPods) {
			written, err := jobs.UpdateStatus(ctx, j, metav1.UpdateOptions{})
			if err != nil {
				return err
			}
			j.ResourceVersion = written.ResourceVersion
		}
		counted := append(append([]types.UID{}, u.Succeeded...), u.Failed...)
		for _, p := range c.podsOf(j) {
			if hasUID(counted, p.UID) {
				release = append(release, p)
			}
		}
	}
	if err := c.removeFinalizers(ctx, release); err != nil {
		return err
	}
	j.Status.Succeeded += int32(len(u.Succeeded))
	j.Status.Failed += int32(len(u.Failed))
	j.Status.UncountedTerminatedPods = &batch.UncountedTerminatedPods{}
	if done {
		c.finish(j, now)
	}
	if apiequality.Semantic.DeepEqual(j.Status, old.Status) {
		return nil
	}
	_, err := jobs.UpdateStatus(ctx, j, metav1.UpdateOptions{})
	return err
}

// finish turns the Job's SuccessCriteriaMet into Complete (with its
// completion time) or its FailureTarget into Failed, and records the event.
func (c *Controller) finish(j *batch.Job, now time.Time) {
	if t := condition(j, batch.JobSuccessCriteriaMet); t != nil && t.Status == v1.ConditionTrue {
		setCondition(j, batch.JobComplete, v1.ConditionTrue, t.Reason, t.Message, now)
		j.Status.CompletionTime = &metav1.Time{Time: now}
		c.recorder.Event(j, v1.EventTypeNormal, "Completed", "Job completed")
		return
	}
	if t := condition(j, batch.JobFailureTarget); t != nil && t.Status == v1.ConditionTrue {
		setCondition(j, batch.JobFailed, v1.ConditionTrue, t.Reason, t.Message, now)
		c.recorder.Event(j, v1.EventTypeWarning, t.Reason, t.Message)
	}
}
