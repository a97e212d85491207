package deployment

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"time"

	apps "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/podtrace/podtrace/engine/controllers/controllerutil"
	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

func (c *Controller) syncStatusOnly(ctx context.Context, d *apps.Deployment, rsList []*apps.ReplicaSet) error {
	newRS, oldRSs, err := c.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	return c.syncDeploymentStatus(ctx, append(oldRSs, newRS), newRS, d)
}

// sync handles a scaling event or a paused deployment: it scales without rolling out.
func (c *Controller) sync(ctx context.Context, d *apps.Deployment, rsList []*apps.ReplicaSet) error {
	newRS, oldRSs, err := c.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	if err := c.scale(ctx, d, newRS, oldRSs); err != nil {
		return err
	}
	if d.Spec.Paused {
		if err := c.cleanupDeployment(ctx, oldRSs, d); err != nil {
			return err
		}
	}
	return c.syncDeploymentStatus(ctx, append(oldRSs, newRS), newRS, d)
}

func (c *Controller) checkPausedConditions(ctx context.Context, d *apps.Deployment) error {
	if !hasProgressDeadline(d) {
		return nil
	}
	cond := getCondition(d.Status, apps.DeploymentProgressing)
	if cond != nil && cond.Reason == TimedOutReason {
		return nil
	}
	pausedCondExists := cond != nil && cond.Reason == PausedDeployReason
	now := c.clock.Now()
	switch {
	case d.Spec.Paused && !pausedCondExists:
		setCondition(&d.Status, *newCondition(apps.DeploymentProgressing, v1.ConditionUnknown, PausedDeployReason, "Deployment is paused", now))
	case !d.Spec.Paused && pausedCondExists:
		setCondition(&d.Status, *newCondition(apps.DeploymentProgressing, v1.ConditionUnknown, ResumedDeployReason, "Deployment is resumed", now))
	default:
		return nil
	}
	_, err := c.cfg.Client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	return err
}

func (c *Controller) getAllReplicaSetsAndSyncRevision(ctx context.Context, d *apps.Deployment, rsList []*apps.ReplicaSet, create bool) (*apps.ReplicaSet, []*apps.ReplicaSet, error) {
	oldRSs := findOldReplicaSets(d, rsList)
	newRS, err := c.getNewReplicaSet(ctx, d, rsList, oldRSs, create)
	if err != nil {
		return nil, nil, err
	}
	return newRS, oldRSs, nil
}

func (c *Controller) rsRef(rs *apps.ReplicaSet) trace.Ref {
	return trace.Ref{Kind: stages.KindReplicaSet, Namespace: rs.Namespace, Name: rs.Name, UID: string(rs.UID)}
}

// getNewReplicaSet returns the replica set that matches d's template, syncing
// its revision annotations, or creates it when create is true.
func (c *Controller) getNewReplicaSet(ctx context.Context, d *apps.Deployment, rsList, oldRSs []*apps.ReplicaSet, create bool) (*apps.ReplicaSet, error) {
	existing := findNewReplicaSet(d, rsList)
	newRevision := strconv.FormatInt(maxRevision(oldRSs)+1, 10)
	now := c.clock.Now()
	if existing != nil {
		rsCopy := existing.DeepCopy()
		annotationsUpdated := setNewReplicaSetAnnotations(d, rsCopy, newRevision, true)
		minReadyNeedsUpdate := rsCopy.Spec.MinReadySeconds != d.Spec.MinReadySeconds
		if annotationsUpdated || minReadyNeedsUpdate {
			rsCopy.Spec.MinReadySeconds = d.Spec.MinReadySeconds
			return c.cfg.Client.AppsV1().ReplicaSets(rsCopy.Namespace).Update(ctx, rsCopy, metav1.UpdateOptions{})
		}
		needsUpdate := setDeploymentRevision(d, rsCopy.Annotations[RevisionAnnotation])
		if hasProgressDeadline(d) && getCondition(d.Status, apps.DeploymentProgressing) == nil {
			msg := fmt.Sprintf("Found new replica set %q", rsCopy.Name)
			setCondition(&d.Status, *newCondition(apps.DeploymentProgressing, v1.ConditionTrue, FoundNewRSReason, msg, now))
			needsUpdate = true
		}
		if needsUpdate {
			if _, err := c.cfg.Client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
				return nil, err
			}
		}
		return rsCopy, nil
	}
	if !create {
		return nil, nil
	}

	template := *d.Spec.Template.DeepCopy()
	hash := controllerutil.ComputeHash(&template, d.Status.CollisionCount)
	template.Labels = cloneAndAdd(d.Spec.Template.Labels, apps.DefaultDeploymentUniqueLabelKey, hash)
	selector := d.Spec.Selector.DeepCopy()
	if selector.MatchLabels == nil {
		selector.MatchLabels = map[string]string{}
	}
	selector.MatchLabels[apps.DefaultDeploymentUniqueLabelKey] = hash
	newRS := apps.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            ReplicaSetName(d.Name, hash),
			Namespace:       d.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, controllerKind)},
			Labels:          template.Labels,
		},
		Spec: apps.ReplicaSetSpec{Replicas: new(int32), MinReadySeconds: d.Spec.MinReadySeconds, Selector: selector, Template: template},
	}
	count, err := newRSNewReplicas(d, append(oldRSs, &newRS), &newRS)
	if err != nil {
		return nil, err
	}
	*newRS.Spec.Replicas = count
	setNewReplicaSetAnnotations(d, &newRS, newRevision, false)

	start := now
	ref := c.rsRef(&newRS)
	created, err := c.createReplicaSet(ctx, ref, &newRS)
	alreadyExists := false
	switch {
	case apierrors.IsAlreadyExists(err):
		alreadyExists = true
		rs, rsErr := c.rsLister.ReplicaSets(newRS.Namespace).Get(newRS.Name)
		if rsErr != nil {
			return nil, rsErr
		}
		if ref := metav1.GetControllerOf(rs); ref != nil && ref.UID == d.UID && equalIgnoreHash(&d.Spec.Template, &rs.Spec.Template) {
			created, err = rs, nil
			break
		}
		// A hash collision: bump the count so the next sync picks a new name.
		if d.Status.CollisionCount == nil {
			d.Status.CollisionCount = new(int32)
		}
		*d.Status.CollisionCount++
		_, _ = c.cfg.Client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
		return nil, err
	case apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause):
		return nil, err
	case err != nil:
		msg := fmt.Sprintf("Failed to create new replica set %q: %v", newRS.Name, err)
		if hasProgressDeadline(d) {
			setCondition(&d.Status, *newCondition(apps.DeploymentProgressing, v1.ConditionFalse, FailedRSCreateReason, msg, c.clock.Now()))
			_, _ = c.cfg.Client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
		}
		c.recorder.Eventf(d, v1.EventTypeWarning, FailedRSCreateReason, "%s", msg)
		key := controllerutil.KeyOf(d)
		c.queue.AddFailure(key, controllerutil.Failure{Ref: ref, Start: start, Reason: FailedRSCreateReason, Message: msg, Attempt: c.queue.Attempt(key)})
		return nil, err
	}
	if !alreadyExists {
		reason, msg := NewReplicaSetReason, fmt.Sprintf("Created new replica set %q", created.Name)
		if count > 0 {
			reason, msg = "ScalingReplicaSet", fmt.Sprintf("Scaled up replica set %s from 0 to %d", created.Name, count)
			c.recorder.Eventf(d, v1.EventTypeNormal, "ScalingReplicaSet", "%s", msg)
		}
		c.cfg.Tracer.BeginAt(c.rsRef(created), stages.Reconcile, Component, start).
			With(func(e *stages.Event) { e.Attempt = c.queue.Attempt(controllerutil.KeyOf(d)) }).
			Succeed(reason, msg)
	}
	needsUpdate := setDeploymentRevision(d, newRevision)
	if !alreadyExists && hasProgressDeadline(d) {
		msg := fmt.Sprintf("Created new replica set %q", created.Name)
		setCondition(&d.Status, *newCondition(apps.DeploymentProgressing, v1.ConditionTrue, NewReplicaSetReason, msg, c.clock.Now()))
		needsUpdate = true
	}
	if needsUpdate {
		_, err = c.cfg.Client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	}
	return created, err
}

// createReplicaSet gates the reconcile stage and creates rs.
func (c *Controller) createReplicaSet(ctx context.Context, ref trace.Ref, rs *apps.ReplicaSet) (*apps.ReplicaSet, error) {
	fault, err := c.cfg.Tracer.Gate(ctx, ref, stages.Reconcile, Component)
	if err != nil {
		return nil, err
	}
	if fault != nil {
		return nil, controllerutil.FaultError(fault, "create", "replicasets", rs.Namespace, c.cfg.User)
	}
	return c.cfg.Client.AppsV1().ReplicaSets(rs.Namespace).Create(ctx, rs, metav1.CreateOptions{})
}

func cloneAndAdd(m map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for a, b := range m {
		out[a] = b
	}
	out[k] = v
	return out
}

// ReplicaSetName returns "<deployment>-<hash>", the deployment name cut so
// that the result is a valid object name.
func ReplicaSetName(deploymentName, hash string) string {
	maxLen := validation.DNS1123SubdomainMaxLength - 1 - len(hash)
	if len(deploymentName) > maxLen && maxLen > 0 {
		return deploymentName[:maxLen] + "-" + hash
	}
	return deploymentName + "-" + hash
}

// scale scales the active replica sets proportionally when the deployment's
// replicas change (upstream's proportional scaling for rolling updates).
func (c *Controller) scale(ctx context.Context, d *apps.Deployment, newRS *apps.ReplicaSet, oldRSs []*apps.ReplicaSet) error {
	if rs := findActiveOrLatest(newRS, oldRSs); rs != nil {
		if *rs.Spec.Replicas == *d.Spec.Replicas {
			return nil
		}
		_, _, err := c.scaleReplicaSet(ctx, rs, *d.Spec.Replicas, d, false)
		return err
	}
	if isSaturated(d, newRS) {
		for _, old := range controllerutil.FilterActiveReplicaSets(oldRSs) {
			if _, _, err := c.scaleReplicaSet(ctx, old, 0, d, false); err != nil {
				return err
			}
		}
		return nil
	}
	if !isRollingUpdate(d) {
		return nil
	}
	all := controllerutil.FilterActiveReplicaSets(append(oldRSs, newRS))
	allowed := int32(0)
	if *d.Spec.Replicas > 0 {
		allowed = *d.Spec.Replicas + maxSurge(d)
	}
	toAdd := allowed - specReplicas(all)
	switch {
	case toAdd > 0:
		sort.Sort(controllerutil.ReplicaSetsBySizeNewer(all))
	case toAdd < 0:
		sort.Sort(controllerutil.ReplicaSetsBySizeOlder(all))
	}
	added := int32(0)
	size := map[string]int32{}
	for _, rs := range all {
		if toAdd != 0 {
			p := replicaSetProportion(rs, d, toAdd, added)
			size[rs.Name] = *rs.Spec.Replicas + p
			added += p
		} else {
			size[rs.Name] = *rs.Spec.Replicas
		}
	}
	for i, rs := range all {
		if i == 0 && toAdd != 0 {
			size[rs.Name] = max(size[rs.Name]+toAdd-added, 0)
		}
		if _, _, err := c.scaleReplicaSet(ctx, rs, size[rs.Name], d, true); err != nil {
			return err
		}
	}
	return nil
}

// scaleReplicaSet sets rs's replicas (and replicas annotations), records
// ScalingReplicaSet and reports the reconcile stage.
func (c *Controller) scaleReplicaSet(ctx context.Context, rs *apps.ReplicaSet, newScale int32, d *apps.Deployment, force bool) (bool, *apps.ReplicaSet, error) {
	if !force && *rs.Spec.Replicas == newScale {
		return false, rs, nil
	}
	sizeNeedsUpdate := *rs.Spec.Replicas != newScale
	maxReplicas := *d.Spec.Replicas + maxSurge(d)
	if !sizeNeedsUpdate && !replicasAnnotationsNeedUpdate(rs, *d.Spec.Replicas, maxReplicas) {
		return false, rs, nil
	}
	oldScale := *rs.Spec.Replicas
	rsCopy := rs.DeepCopy()
	*rsCopy.Spec.Replicas = newScale
	setReplicasAnnotations(rsCopy, *d.Spec.Replicas, maxReplicas)
	start := c.clock.Now()
	attempt := c.queue.Attempt(controllerutil.KeyOf(d))
	direction := "down"
	if oldScale < newScale {
		direction = "up"
	}
	var updated *apps.ReplicaSet
	fault, err := c.cfg.Tracer.Gate(ctx, c.rsRef(rs), stages.Reconcile, Component)
	switch {
	case err != nil:
		return false, rs, err
	case fault != nil:
		err = controllerutil.FaultError(fault, "update", "replicasets", rs.Namespace, c.cfg.User)
	default:
		updated, err = c.cfg.Client.AppsV1().ReplicaSets(rsCopy.Namespace).Update(ctx, rsCopy, metav1.UpdateOptions{})
	}
	if err != nil {
		if sizeNeedsUpdate {
			msg := fmt.Sprintf("Failed to scale %s replica set %s from %d to %d: %v", direction, rs.Name, oldScale, newScale, err)
			c.queue.AddFailure(controllerutil.KeyOf(d), controllerutil.Failure{Ref: c.rsRef(rs), Start: start, Reason: "ScalingReplicaSet", Message: msg, Attempt: attempt})
		}
		return false, nil, err
	}
	if !sizeNeedsUpdate {
		return false, updated, nil
	}
	msg := fmt.Sprintf("Scaled %s replica set %s from %d to %d", direction, updated.Name, oldScale, newScale)
	c.recorder.Eventf(d, v1.EventTypeNormal, "ScalingReplicaSet", "%s", msg)
	c.cfg.Tracer.BeginAt(c.rsRef(updated), stages.Reconcile, Component, start).
		With(func(e *stages.Event) { e.Attempt = attempt }).
		Succeed("ScalingReplicaSet", msg)
	return true, updated, nil
}

// cleanupDeployment deletes old, empty replica sets beyond revisionHistoryLimit.
func (c *Controller) cleanupDeployment(ctx context.Context, oldRSs []*apps.ReplicaSet, d *apps.Deployment) error {
	if !hasRevisionHistoryLimit(d) {
		return nil
	}
	var cleanable []*apps.ReplicaSet
	for _, rs := range oldRSs {
		if rs != nil && rs.DeletionTimestamp == nil {
			cleanable = append(cleanable, rs)
		}
	}
	diff := int32(len(cleanable)) - *d.Spec.RevisionHistoryLimit
	if diff <= 0 {
		return nil
	}
	sort.Sort(replicaSetsByRevision(cleanable))
	for i := int32(0); i < diff; i++ {
		rs := cleanable[i]
		if rs.Status.Replicas != 0 || *rs.Spec.Replicas != 0 || rs.Generation > rs.Status.ObservedGeneration || rs.DeletionTimestamp != nil {
			continue
		}
		if err := c.cfg.Client.AppsV1().ReplicaSets(rs.Namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

func (c *Controller) syncDeploymentStatus(ctx context.Context, allRSs []*apps.ReplicaSet, newRS *apps.ReplicaSet, d *apps.Deployment) error {
	newStatus := calculateStatus(allRSs, newRS, d, c.clock.Now())
	if reflect.DeepEqual(d.Status, newStatus) {
		return nil
	}
	d.Status = newStatus
	_, err := c.cfg.Client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	return err
}

// calculateStatus computes a deployment's status from its replica sets:
// the replica counts and the Available condition.
func calculateStatus(allRSs []*apps.ReplicaSet, newRS *apps.ReplicaSet, d *apps.Deployment, now time.Time) apps.DeploymentStatus {
	available := availableReplicas(allRSs)
	unavailable := max(specReplicas(allRSs)-available, 0)
	status := apps.DeploymentStatus{
		ObservedGeneration:  d.Generation,
		Replicas:            actualReplicas(allRSs),
		UpdatedReplicas:     actualReplicas([]*apps.ReplicaSet{newRS}),
		ReadyReplicas:       readyReplicas(allRSs),
		AvailableReplicas:   available,
		UnavailableReplicas: unavailable,
		CollisionCount:      d.Status.CollisionCount,
	}
	status.Conditions = append(status.Conditions, d.Status.Conditions...)
	if available >= *d.Spec.Replicas-maxUnavailable(d) {
		setCondition(&status, *newCondition(apps.DeploymentAvailable, v1.ConditionTrue, MinimumReplicasAvailable, "Deployment has minimum availability.", now))
	} else {
		setCondition(&status, *newCondition(apps.DeploymentAvailable, v1.ConditionFalse, MinimumReplicasUnavailable, "Deployment does not have minimum availability.", now))
	}
	return status
}

// isScalingEvent reports whether d's replicas differ from what its active
// replica sets were last scaled for.
func (c *Controller) isScalingEvent(ctx context.Context, d *apps.Deployment, rsList []*apps.ReplicaSet) (bool, error) {
	newRS, oldRSs, err := c.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return false, err
	}
	for _, rs := range controllerutil.FilterActiveReplicaSets(append(oldRSs, newRS)) {
		if desired, ok := nonNegativeAnnotation(rs, DesiredReplicasAnnotation); ok && desired != *d.Spec.Replicas {
			return true, nil
		}
	}
	return false, nil
}
