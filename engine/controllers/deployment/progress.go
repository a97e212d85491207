package deployment

import (
	"context"
	"fmt"
	"reflect"
	"time"

	apps "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/engine/controllers/controllerutil"
)

// syncRolloutStatus writes the status with the Progressing condition and any
// ReplicaFailure of the replica sets.
func (c *Controller) syncRolloutStatus(ctx context.Context, allRSs []*apps.ReplicaSet, newRS *apps.ReplicaSet, d *apps.Deployment) error {
	now := c.clock.Now()
	newStatus := rolloutStatus(allRSs, newRS, d, now)
	if reflect.DeepEqual(d.Status, newStatus) {
		c.requeueStuckDeployment(d, newStatus, now)
		return nil
	}
	d.Status = newStatus
	_, err := c.cfg.Client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	return err
}

// rolloutStatus is calculateStatus plus the Progressing and ReplicaFailure conditions.
func rolloutStatus(allRSs []*apps.ReplicaSet, newRS *apps.ReplicaSet, d *apps.Deployment, now time.Time) apps.DeploymentStatus {
	newStatus := calculateStatus(allRSs, newRS, d, now)
	if !hasProgressDeadline(d) {
		removeCondition(&newStatus, apps.DeploymentProgressing)
	}
	currentCond := getCondition(d.Status, apps.DeploymentProgressing)
	isComplete := newStatus.Replicas == newStatus.UpdatedReplicas && currentCond != nil && currentCond.Reason == NewRSAvailableReason
	if hasProgressDeadline(d) && !isComplete {
		switch {
		case deploymentComplete(d, &newStatus):
			msg := fmt.Sprintf("Deployment %q has successfully progressed.", d.Name)
			if newRS != nil {
				msg = fmt.Sprintf("ReplicaSet %q has successfully progressed.", newRS.Name)
			}
			setCondition(&newStatus, *newCondition(apps.DeploymentProgressing, v1.ConditionTrue, NewRSAvailableReason, msg, now))
		case deploymentProgressing(d, &newStatus):
			msg := fmt.Sprintf("Deployment %q is progressing.", d.Name)
			if newRS != nil {
				msg = fmt.Sprintf("ReplicaSet %q is progressing.", newRS.Name)
			}
			cond := newCondition(apps.DeploymentProgressing, v1.ConditionTrue, ReplicaSetUpdatedReason, msg, now)
			if currentCond != nil {
				if currentCond.Status == v1.ConditionTrue {
					cond.LastTransitionTime = currentCond.LastTransitionTime
				}
				removeCondition(&newStatus, apps.DeploymentProgressing)
			}
			setCondition(&newStatus, *cond)
		case deploymentTimedOut(d, &newStatus, now):
			msg := fmt.Sprintf("Deployment %q has timed out progressing.", d.Name)
			if newRS != nil {
				msg = fmt.Sprintf("ReplicaSet %q has timed out progressing.", newRS.Name)
			}
			setCondition(&newStatus, *newCondition(apps.DeploymentProgressing, v1.ConditionFalse, TimedOutReason, msg, now))
		}
	}
	if failures := replicaFailures(allRSs, newRS); len(failures) > 0 {
		setCondition(&newStatus, failures[0])
	} else {
		removeCondition(&newStatus, apps.DeploymentReplicaFailure)
	}
	return newStatus
}

// replicaFailures returns the ReplicaFailure conditions of the new replica
// set, or else of any replica set.
func replicaFailures(allRSs []*apps.ReplicaSet, newRS *apps.ReplicaSet) []apps.DeploymentCondition {
	var out []apps.DeploymentCondition
	collect := func(rs *apps.ReplicaSet) {
		for _, c := range rs.Status.Conditions {
			if c.Type == apps.ReplicaSetReplicaFailure {
				out = append(out, replicaSetToDeploymentCondition(c))
			}
		}
	}
	if newRS != nil {
		collect(newRS)
	}
	if len(out) > 0 {
		return out
	}
	for _, rs := range allRSs {
		if rs != nil {
			collect(rs)
		}
	}
	return out
}

// requeueStuckDeployment checks the deployment again when its progress deadline passes.
func (c *Controller) requeueStuckDeployment(d *apps.Deployment, newStatus apps.DeploymentStatus, now time.Time) {
	cur := getCondition(d.Status, apps.DeploymentProgressing)
	if !hasProgressDeadline(d) || cur == nil || deploymentComplete(d, &newStatus) || cur.Reason == TimedOutReason {
		return
	}
	after := cur.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second).Sub(now)
	if after < time.Second {
		c.queue.AddRateLimited(controllerutil.KeyOf(d))
		return
	}
	c.queue.AddAfter(controllerutil.KeyOf(d), after+time.Second)
}
