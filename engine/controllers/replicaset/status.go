package replicaset

import (
	"context"
	"reflect"
	"time"

	apps "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	appsclient "k8s.io/client-go/kubernetes/typed/apps/v1"

	"github.com/podtrace/podtrace/engine/controllers/controllerutil"
)

// statusUpdateRetries is how often a conflicting status update is retried.
const statusUpdateRetries = 1

// calculateStatus computes rs's status from its active pods at now: the
// replica counts and the ReplicaFailure condition from manageErr.
func calculateStatus(rs *apps.ReplicaSet, activePods []*v1.Pod, manageErr error, now time.Time) apps.ReplicaSetStatus {
	newStatus := rs.Status
	fully, ready, available := 0, 0, 0
	templateLabel := labels.Set(rs.Spec.Template.Labels).AsSelectorPreValidated()
	for _, pod := range activePods {
		if templateLabel.Matches(labels.Set(pod.Labels)) {
			fully++
		}
		if controllerutil.IsPodReady(pod) {
			ready++
			if controllerutil.IsPodAvailable(pod, rs.Spec.MinReadySeconds, now) {
				available++
			}
		}
	}
	failureCond := getCondition(rs.Status, apps.ReplicaSetReplicaFailure)
	if manageErr != nil && failureCond == nil {
		var reason string
		if diff := len(activePods) - int(*rs.Spec.Replicas); diff < 0 {
			reason = "FailedCreate"
		} else if diff > 0 {
			reason = "FailedDelete"
		}
		setCondition(&newStatus, apps.ReplicaSetCondition{Type: apps.ReplicaSetReplicaFailure, Status: v1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now), Reason: reason, Message: manageErr.Error()})
	} else if manageErr == nil && failureCond != nil {
		newStatus.Conditions = filterOutCondition(newStatus.Conditions, apps.ReplicaSetReplicaFailure)
	}
	newStatus.Replicas = int32(len(activePods))
	newStatus.FullyLabeledReplicas = int32(fully)
	newStatus.ReadyReplicas = int32(ready)
	newStatus.AvailableReplicas = int32(available)
	return newStatus
}

// updateReplicaSetStatus writes newStatus through replicasets/status unless
// nothing changed, retrying once on failure with a fresh copy.
func updateReplicaSetStatus(ctx context.Context, c appsclient.ReplicaSetInterface, rs *apps.ReplicaSet, newStatus apps.ReplicaSetStatus) (*apps.ReplicaSet, error) {
	if rs.Status.Replicas == newStatus.Replicas &&
		rs.Status.FullyLabeledReplicas == newStatus.FullyLabeledReplicas &&
		rs.Status.ReadyReplicas == newStatus.ReadyReplicas &&
		rs.Status.AvailableReplicas == newStatus.AvailableReplicas &&
		rs.Generation == rs.Status.ObservedGeneration &&
		reflect.DeepEqual(rs.Status.Conditions, newStatus.Conditions) {
		return rs, nil
	}
	newStatus.ObservedGeneration = rs.Generation
	var updateErr error
	for i := 0; ; i++ {
		rs.Status = newStatus
		updated, err := c.UpdateStatus(ctx, rs, metav1.UpdateOptions{})
		if err == nil {
			return updated, nil
		}
		updateErr = err
		if i >= statusUpdateRetries {
			break
		}
		if rs, err = c.Get(ctx, rs.Name, metav1.GetOptions{}); err != nil {
			return nil, err
		}
	}
	return nil, updateErr
}

func getCondition(status apps.ReplicaSetStatus, t apps.ReplicaSetConditionType) *apps.ReplicaSetCondition {
	for _, c := range status.Conditions {
		if c.Type == t {
			return &c
		}
	}
	return nil
}

func setCondition(status *apps.ReplicaSetStatus, cond apps.ReplicaSetCondition) {
	if cur := getCondition(*status, cond.Type); cur != nil && cur.Status == cond.Status && cur.Reason == cond.Reason {
		return
	}
	status.Conditions = append(filterOutCondition(status.Conditions, cond.Type), cond)
}

func filterOutCondition(conds []apps.ReplicaSetCondition, t apps.ReplicaSetConditionType) []apps.ReplicaSetCondition {
	var out []apps.ReplicaSetCondition
	for _, c := range conds {
		if c.Type != t {
			out = append(out, c)
		}
	}
	return out
}
