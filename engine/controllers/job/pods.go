package job

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podtrace/podtrace/engine/controllers/controllerutil"
	"github.com/podtrace/podtrace/engine/trace"
)

// burst caps the pods created or deleted in one sync, as upstream's
// MaxPodCreateDeletePerSync.
const burst = 500

// manageJob is upstream's manageJob for NonIndexed Jobs: a suspended Job
// loses its pods; otherwise it runs parallelism pods, never more than the
// completions left (none more once a pod succeeded when completions is
// unset), creating replacements only after the failure back-off. It
// returns the active pods it leaves and how many it deleted.
func (c *Controller) manageJob(ctx context.Context, key string, j *batch.Job, active []*v1.Pod, now time.Time) (int, int, error) {
	want := int(*j.Spec.Parallelism)
	succeeded := int(j.Status.Succeeded) + len(j.Status.UncountedTerminatedPods.Succeeded)
	switch {
	case suspended(j):
		want = 0
	case j.Spec.Completions == nil && succeeded > 0:
		want = len(active)
	case j.Spec.Completions != nil:
		want = max(min(int(*j.Spec.Completions)-succeeded, want), 0)
	}
	if len(active) > want {
		deleted, err := c.deletePods(ctx, key, j, excess(active, len(active)-want, now))
		return len(active) - deleted, deleted, err
	}
	diff := min(want-len(active), burst)
	if diff == 0 {
		return len(active), 0, nil
	}
	if left := c.backoff.get(key).remaining(now); left > 0 {
		c.queue.AddAfter(key, left)
		return len(active), 0, nil
	}
	c.expectations.ExpectCreations(key, diff)
	attempt := c.queue.Attempt(key)
	for i := 0; i < diff; i++ {
		if err := c.createPod(ctx, j, attempt); err != nil {
			for ; i < diff; i++ {
				c.expectations.CreationObserved(key)
			}
			return len(active), 0, err
		}
	}
	return len(active) + diff, 0, nil
}

// excess picks the n pods to delete first, ranked as controllers rank them.
func excess(active []*v1.Pod, n int, now time.Time) []*v1.Pod {
	pods := append([]*v1.Pod{}, active...)
	sort.Sort(controllerutil.RankedPods{Pods: pods, Rank: make([]int, len(pods)), Now: metav1.NewTime(now)})
	return pods[:n]
}

// createPod creates one pod from the Job's template with the tracking
// finalizer (the reconcile stage, events and retry as every controller's).
func (c *Controller) createPod(ctx context.Context, j *batch.Job, attempt int) error {
	return c.cfg.CreatePod(ctx, controllerutil.PodCreate{Owner: j,
		OwnerRef: trace.Ref{Kind: KindJob, Namespace: j.Namespace, Name: j.Name, UID: string(j.UID)},
		Kind:     controllerKind, Template: &j.Spec.Template, Attempt: attempt,
		Mutate: func(p *v1.Pod) { p.Finalizers = append(p.Finalizers, TrackingFinalizer) },
	}, Component, c.recorder, c.queue)
}

// deletePods deletes the Job's pods with upstream's events and returns how
// many it deleted (a pod already gone counts).
func (c *Controller) deletePods(ctx context.Context, key string, j *batch.Job, pods []*v1.Pod) (int, error) {
	pods = pods[:min(len(pods), burst)]
	keys := make([]string, len(pods))
	for i, p := range pods {
		keys[i] = controllerutil.PodKey(p)
	}
	c.expectations.ExpectDeletions(key, keys)
	deleted := 0
	var firstErr error
	for _, p := range pods {
		err := c.cfg.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
		switch {
		case err == nil:
			deleted++
			c.recorder.Eventf(j, v1.EventTypeNormal, controllerutil.SuccessfulDeletePodReason, "Deleted pod: %v", p.Name)
		case apierrors.IsNotFound(err):
			deleted++
			c.expectations.DeletionObserved(key, controllerutil.PodKey(p))
		default:
			c.expectations.DeletionObserved(key, controllerutil.PodKey(p))
			c.recorder.Eventf(j, v1.EventTypeWarning, controllerutil.FailedDeletePodReason, "Error deleting: %v", err)
			if firstErr == nil {
				firstErr = fmt.Errorf("unable to delete pods: %v", err)
			}
		}
	}
	return deleted, firstErr
}

func hasFinalizer(p *v1.Pod) bool {
	for _, f := range p.Finalizers {
		if f == TrackingFinalizer {
			return true
		}
	}
	return false
}

// removeFinalizers takes the tracking finalizer off each pod that has it,
// (a pod already gone is fine).
func (c *Controller) removeFinalizers(ctx context.Context, pods []*v1.Pod) error {
	for _, p := range pods {
		if !hasFinalizer(p) {
			continue
		}
		c.finalizing.add(p.UID)
		if err := c.removeFinalizer(ctx, p); err != nil && !apierrors.IsNotFound(err) {
			c.finalizing.remove(p.UID)
			return err
		}
	}
	return nil
}

// removeFinalizer sends upstream's removeTrackingFinalizerPatch.
func (c *Controller) removeFinalizer(ctx context.Context, p *v1.Pod) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"$deleteFromPrimitiveList/finalizers": []string{TrackingFinalizer}}})
	if err != nil {
		return err
	}
	_, err = c.cfg.Client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	return err
}
