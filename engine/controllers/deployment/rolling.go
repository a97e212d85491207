package deployment

import (
	"context"
	"fmt"
	"sort"

	apps "k8s.io/api/apps/v1"

	"github.com/podtrace/podtrace/engine/controllers/controllerutil"
)

// rolloutRolling scales the new replica set up and the old ones down within
// maxSurge and maxUnavailable.
func (c *Controller) rolloutRolling(ctx context.Context, d *apps.Deployment, rsList []*apps.ReplicaSet) error {
	newRS, oldRSs, err := c.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, true)
	if err != nil {
		return err
	}
	allRSs := append(oldRSs, newRS)
	scaledUp, err := c.reconcileNewReplicaSet(ctx, allRSs, newRS, d)
	if err != nil {
		return err
	}
	if scaledUp {
		return c.syncRolloutStatus(ctx, allRSs, newRS, d)
	}
	scaledDown, err := c.reconcileOldReplicaSets(ctx, allRSs, controllerutil.FilterActiveReplicaSets(oldRSs), newRS, d)
	if err != nil {
		return err
	}
	if scaledDown {
		return c.syncRolloutStatus(ctx, allRSs, newRS, d)
	}
	if deploymentComplete(d, &d.Status) {
		if err := c.cleanupDeployment(ctx, oldRSs, d); err != nil {
			return err
		}
	}
	return c.syncRolloutStatus(ctx, allRSs, newRS, d)
}

func (c *Controller) reconcileNewReplicaSet(ctx context.Context, allRSs []*apps.ReplicaSet, newRS *apps.ReplicaSet, d *apps.Deployment) (bool, error) {
	if *newRS.Spec.Replicas == *d.Spec.Replicas {
		return false, nil
	}
	if *newRS.Spec.Replicas > *d.Spec.Replicas {
		scaled, _, err := c.scaleReplicaSet(ctx, newRS, *d.Spec.Replicas, d, false)
		return scaled, err
	}
	count, err := newRSNewReplicas(d, allRSs, newRS)
	if err != nil {
		return false, err
	}
	scaled, _, err := c.scaleReplicaSet(ctx, newRS, count, d, false)
	return scaled, err
}

func (c *Controller) reconcileOldReplicaSets(ctx context.Context, allRSs, oldRSs []*apps.ReplicaSet, newRS *apps.ReplicaSet, d *apps.Deployment) (bool, error) {
	if specReplicas(oldRSs) == 0 {
		return false, nil
	}
	allPods := specReplicas(allRSs)
	minAvailable := *d.Spec.Replicas - maxUnavailable(d)
	newRSUnavailable := *newRS.Spec.Replicas - newRS.Status.AvailableReplicas
	maxScaledDown := allPods - minAvailable - newRSUnavailable
	if maxScaledDown <= 0 {
		return false, nil
	}
	oldRSs, cleaned, err := c.cleanupUnhealthyReplicas(ctx, oldRSs, d, maxScaledDown)
	if err != nil {
		return false, nil
	}
	scaledDown, err := c.scaleDownOldReplicaSetsForRollingUpdate(ctx, append(oldRSs, newRS), oldRSs, d)
	if err != nil {
		return false, nil
	}
	return cleaned+scaledDown > 0, nil
}

// cleanupUnhealthyReplicas scales down old replica sets' unavailable pods first.
func (c *Controller) cleanupUnhealthyReplicas(ctx context.Context, oldRSs []*apps.ReplicaSet, d *apps.Deployment, maxCleanup int32) ([]*apps.ReplicaSet, int32, error) {
	sort.Sort(controllerutil.ReplicaSetsByCreationTimestamp(oldRSs))
	total := int32(0)
	for i, rs := range oldRSs {
		if total >= maxCleanup {
			break
		}
		if *rs.Spec.Replicas == 0 || *rs.Spec.Replicas == rs.Status.AvailableReplicas {
			continue
		}
		n := min(maxCleanup-total, *rs.Spec.Replicas-rs.Status.AvailableReplicas)
		newCount := *rs.Spec.Replicas - n
		if newCount > *rs.Spec.Replicas {
			return nil, 0, fmt.Errorf("when cleaning up unhealthy replicas, got invalid request to scale down %s/%s %d -> %d", rs.Namespace, rs.Name, *rs.Spec.Replicas, newCount)
		}
		_, updated, err := c.scaleReplicaSet(ctx, rs, newCount, d, false)
		if err != nil {
			return nil, total, err
		}
		total += n
		oldRSs[i] = updated
	}
	return oldRSs, total, nil
}

// scaleDownOldReplicaSetsForRollingUpdate scales old replica sets down while
// enough pods stay available.
func (c *Controller) scaleDownOldReplicaSetsForRollingUpdate(ctx context.Context, allRSs, oldRSs []*apps.ReplicaSet, d *apps.Deployment) (int32, error) {
	minAvailable := *d.Spec.Replicas - maxUnavailable(d)
	available := availableReplicas(allRSs)
	if available <= minAvailable {
		return 0, nil
	}
	sort.Sort(controllerutil.ReplicaSetsByCreationTimestamp(oldRSs))
	total, target := int32(0), available-minAvailable
	for _, rs := range oldRSs {
		if total >= target {
			break
		}
		if *rs.Spec.Replicas == 0 {
			continue
		}
		n := min(*rs.Spec.Replicas, target-total)
		newCount := *rs.Spec.Replicas - n
		if newCount > *rs.Spec.Replicas {
			return 0, fmt.Errorf("when scaling down old RS, got invalid request to scale down %s/%s %d -> %d", rs.Namespace, rs.Name, *rs.Spec.Replicas, newCount)
		}
		if _, _, err := c.scaleReplicaSet(ctx, rs, newCount, d, false); err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}
