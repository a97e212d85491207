package replicaset

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	apps "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/podtrace/podtrace/engine/controllers/controllerutil"
	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

// SlowStartInitialBatchSize is the first batch of slowStartBatch, as upstream.
const SlowStartInitialBatchSize = 1

func (c *Controller) syncReplicaSet(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	rs, err := c.rsLister.ReplicaSets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		c.expectations.Delete(key)
		return nil
	}
	if err != nil {
		return err
	}
	needsSync := c.expectations.Satisfied(key)
	selector, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil {
		return nil // an invalid selector never becomes valid by retrying
	}
	all, err := c.podLister.Pods(namespace).List(labels.Everything())
	if err != nil {
		return err
	}
	activePods, err := c.claimPods(ctx, rs, selector, controllerutil.FilterActivePods(ownedOrOrphaned(rs, all)))
	if err != nil {
		return err
	}

	var manageErr error
	if needsSync && rs.DeletionTimestamp == nil {
		manageErr = c.manageReplicas(ctx, activePods, rs)
	}
	rs = rs.DeepCopy()
	now := c.clock.Now()
	newStatus := calculateStatus(rs, activePods, manageErr, now)
	updated, err := updateReplicaSetStatus(ctx, c.cfg.Client.AppsV1().ReplicaSets(rs.Namespace), rs, newStatus)
	if err != nil {
		return err
	}
	if manageErr != nil {
		return manageErr
	}
	if updated.Spec.MinReadySeconds > 0 && updated.Status.ReadyReplicas != updated.Status.AvailableReplicas {
		c.queue.AddAfter(key, time.Duration(updated.Spec.MinReadySeconds)*time.Second)
	}
	return nil
}

// ownedOrOrphaned returns the pods rs controls and the pods no one controls.
func ownedOrOrphaned(rs *apps.ReplicaSet, pods []*v1.Pod) []*v1.Pod {
	var out []*v1.Pod
	for _, p := range pods {
		if ref := metav1.GetControllerOfNoCopy(p); ref == nil || ref.UID == rs.UID {
			out = append(out, p)
		}
	}
	return out
}

// claimPods returns the pods rs owns after adopting matching orphans and
// releasing its pods that no longer match the selector, as upstream.
func (c *Controller) claimPods(ctx context.Context, rs *apps.ReplicaSet, selector labels.Selector, pods []*v1.Pod) ([]*v1.Pod, error) {
	m := controllerutil.NewClaimer(rs, controllerKind,
		func(ctx context.Context) (*apps.ReplicaSet, error) {
			return c.cfg.Client.AppsV1().ReplicaSets(rs.Namespace).Get(ctx, rs.Name, metav1.GetOptions{})
		},
		controllerutil.PatchPods(c.cfg.Client))
	return controllerutil.ClaimAll(ctx, m, selector, pods)
}

func (c *Controller) manageReplicas(ctx context.Context, activePods []*v1.Pod, rs *apps.ReplicaSet) error {
	diff := len(activePods) - int(*rs.Spec.Replicas)
	key := controllerutil.KeyOf(rs)
	if diff < 0 {
		diff = min(-diff, BurstReplicas)
		c.expectations.ExpectCreations(key, diff)
		attempt := c.queue.Attempt(key)
		ok, err := slowStartBatch(diff, SlowStartInitialBatchSize, func() error {
			err := c.createPod(ctx, rs, attempt)
			if err != nil && apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause) {
				return nil
			}
			return err
		})
		for i := 0; i < diff-ok; i++ {
			c.expectations.CreationObserved(key)
		}
		return err
	}
	if diff > 0 {
		diff = min(diff, BurstReplicas)
		related := c.relatedPods(rs)
		victims := PodsToDelete(activePods, related, diff, metav1.NewTime(c.clock.Now()))
		keys := make([]string, len(victims))
		for i, p := range victims {
			keys[i] = controllerutil.PodKey(p)
		}
		c.expectations.ExpectDeletions(key, keys)
		errCh := make(chan error, len(victims))
		var wg sync.WaitGroup
		for _, p := range victims {
			wg.Add(1)
			go func(p *v1.Pod) {
				defer wg.Done()
				if err := c.deletePodOf(ctx, rs, p.Name); err != nil {
					c.expectations.DeletionObserved(key, controllerutil.PodKey(p))
					if !apierrors.IsNotFound(err) {
						errCh <- err
					}
				}
			}(p)
		}
		wg.Wait()
		select {
		case err := <-errCh:
			return err
		default:
		}
	}
	return nil
}

// createPod creates one pod from rs's template (the reconcile stage, events
// and retry as every controller's).
func (c *Controller) createPod(ctx context.Context, rs *apps.ReplicaSet, attempt int) error {
	return c.cfg.CreatePod(ctx, controllerutil.PodCreate{Owner: rs,
		OwnerRef: trace.Ref{Kind: stages.KindReplicaSet, Namespace: rs.Namespace, Name: rs.Name, UID: uid(rs.UID)},
		Kind:     controllerKind, Template: &rs.Spec.Template, Attempt: attempt,
	}, Component, c.recorder, c.queue)
}

func (c *Controller) deletePodOf(ctx context.Context, rs *apps.ReplicaSet, name string) error {
	if err := c.cfg.Client.CoreV1().Pods(rs.Namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return err
		}
		c.recorder.Eventf(rs, v1.EventTypeWarning, controllerutil.FailedDeletePodReason, "Error deleting: %v", err)
		return fmt.Errorf("unable to delete pods: %v", err)
	}
	c.recorder.Eventf(rs, v1.EventTypeNormal, controllerutil.SuccessfulDeletePodReason, "Deleted pod: %v", name)
	return nil
}

// relatedPods returns the pods of every ReplicaSet with the same controller
// as rs (rs itself when it has none), each once.
func (c *Controller) relatedPods(rs *apps.ReplicaSet) []*v1.Pod {
	owners := []*apps.ReplicaSet{rs}
	if ref := metav1.GetControllerOf(rs); ref != nil {
		all, _ := c.rsLister.ReplicaSets(rs.Namespace).List(labels.Everything())
		owners = owners[:0]
		for _, other := range all {
			if o := metav1.GetControllerOf(other); o != nil && o.UID == ref.UID {
				owners = append(owners, other)
			}
		}
	}
	seen := map[string]bool{}
	var out []*v1.Pod
	for _, o := range owners {
		sel, err := metav1.LabelSelectorAsSelector(o.Spec.Selector)
		if err != nil {
			continue
		}
		pods, _ := c.podLister.Pods(o.Namespace).List(sel)
		for _, p := range pods {
			if !seen[string(p.UID)] {
				seen[string(p.UID)] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// slowStartBatch calls fn count times in batches of 1, 2, 4, ... (starting at
// initialBatchSize), running each batch in parallel and stopping after the
// first batch with an error. It returns the number of successful calls and
// the first error.
func slowStartBatch(count, initialBatchSize int, fn func() error) (int, error) {
	remaining, successes := count, 0
	for batch := min(remaining, initialBatchSize); batch > 0; batch = min(2*batch, remaining) {
		errCh := make(chan error, batch)
		var wg sync.WaitGroup
		wg.Add(batch)
		for i := 0; i < batch; i++ {
			go func() {
				defer wg.Done()
				if err := fn(); err != nil {
					errCh <- err
				}
			}()
		}
		wg.Wait()
		successes += batch - len(errCh)
		if len(errCh) > 0 {
			return successes, <-errCh
		}
		remaining -= batch
	}
	return successes, nil
}

// PodsToDelete picks diff victims among pods the way upstream does: pods are
// ranked by controllerutil.RankedPods, where a pod's rank is the number of
// active related pods on its node.
func PodsToDelete(pods, related []*v1.Pod, diff int, now metav1.Time) []*v1.Pod {
	if diff < len(pods) {
		onNode := map[string]int{}
		for _, p := range related {
			if controllerutil.IsPodActive(p) {
				onNode[p.Spec.NodeName]++
			}
		}
		ranks := make([]int, len(pods))
		for i, p := range pods {
			ranks[i] = onNode[p.Spec.NodeName]
		}
		sort.Sort(controllerutil.RankedPods{Pods: pods, Rank: ranks, Now: now})
	}
	return pods[:min(diff, len(pods))]
}
