package deployment

import (
	"context"

	apps "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/engine/controllers/controllerutil"
)

// rolloutRecreate scales every old replica set to zero, waits for their pods
// to go, then creates and scales up the new one.
func (c *Controller) rolloutRecreate(ctx context.Context, d *apps.Deployment, rsList []*apps.ReplicaSet, podMap map[string][]*v1.Pod) error {
	newRS, oldRSs, err := c.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	allRSs := append(oldRSs, newRS)
	scaledDown, err := c.scaleDownOldReplicaSetsForRecreate(ctx, controllerutil.FilterActiveReplicaSets(oldRSs), d)
	if err != nil {
		return err
	}
	if scaledDown || oldPodsRunning(newRS, oldRSs, podMap) {
		return c.syncRolloutStatus(ctx, allRSs, newRS, d)
	}
	if newRS == nil {
		if newRS, oldRSs, err = c.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, true); err != nil {
			return err
		}
		allRSs = append(oldRSs, newRS)
	}
	if _, _, err := c.scaleReplicaSet(ctx, newRS, *d.Spec.Replicas, d, false); err != nil {
		return err
	}
	if deploymentComplete(d, &d.Status) {
		if err := c.cleanupDeployment(ctx, oldRSs, d); err != nil {
			return err
		}
	}
	return c.syncRolloutStatus(ctx, allRSs, newRS, d)
}

func (c *Controller) scaleDownOldReplicaSetsForRecreate(ctx context.Context, oldRSs []*apps.ReplicaSet, d *apps.Deployment) (bool, error) {
	scaled := false
	for i, rs := range oldRSs {
		if *rs.Spec.Replicas == 0 {
			continue
		}
		ok, updated, err := c.scaleReplicaSet(ctx, rs, 0, d, false)
		if err != nil {
			return false, err
		}
		if ok {
			oldRSs[i] = updated
			scaled = true
		}
	}
	return scaled, nil
}

// oldPodsRunning reports whether pods of the old replica sets still run.
func oldPodsRunning(newRS *apps.ReplicaSet, oldRSs []*apps.ReplicaSet, podMap map[string][]*v1.Pod) bool {
	if actualReplicas(oldRSs) > 0 {
		return true
	}
	for rsUID, pods := range podMap {
		if newRS != nil && string(newRS.UID) == rsUID {
			continue
		}
		for _, p := range pods {
			if p.Status.Phase != v1.PodFailed && p.Status.Phase != v1.PodSucceeded {
				return true
			}
		}
	}
	return false
}
