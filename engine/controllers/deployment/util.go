package deployment

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	apps "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	intstrutil "k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podtrace/podtrace/engine/controllers/controllerutil"
)

// Annotations the controller keeps on ReplicaSets (and the revision on the
// Deployment), as upstream.
const (
	RevisionAnnotation        = "deployment.kubernetes.io/revision"
	RevisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	DesiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	MaxReplicasAnnotation     = "deployment.kubernetes.io/max-replicas"
)

// Condition reasons, as upstream.
const (
	ReplicaSetUpdatedReason    = "ReplicaSetUpdated"
	FailedRSCreateReason       = "ReplicaSetCreateError"
	NewReplicaSetReason        = "NewReplicaSetCreated"
	FoundNewRSReason           = "FoundNewReplicaSet"
	NewRSAvailableReason       = "NewReplicaSetAvailable"
	TimedOutReason             = "ProgressDeadlineExceeded"
	PausedDeployReason         = "DeploymentPaused"
	ResumedDeployReason        = "DeploymentResumed"
	MinimumReplicasAvailable   = "MinimumReplicasAvailable"
	MinimumReplicasUnavailable = "MinimumReplicasUnavailable"
)

// maxRevHistoryLengthInChars caps the revision-history annotation.
const maxRevHistoryLengthInChars = 2000

func newCondition(t apps.DeploymentConditionType, status v1.ConditionStatus, reason, message string, now time.Time) *apps.DeploymentCondition {
	ts := metav1.NewTime(now)
	return &apps.DeploymentCondition{Type: t, Status: status, LastUpdateTime: ts, LastTransitionTime: ts, Reason: reason, Message: message}
}

func getCondition(status apps.DeploymentStatus, t apps.DeploymentConditionType) *apps.DeploymentCondition {
	for i := range status.Conditions {
		if c := status.Conditions[i]; c.Type == t {
			return &c
		}
	}
	return nil
}

func setCondition(status *apps.DeploymentStatus, cond apps.DeploymentCondition) {
	cur := getCondition(*status, cond.Type)
	if cur != nil && cur.Status == cond.Status && cur.Reason == cond.Reason {
		return
	}
	if cur != nil && cur.Status == cond.Status {
		cond.LastTransitionTime = cur.LastTransitionTime
	}
	status.Conditions = append(filterOutCondition(status.Conditions, cond.Type), cond)
}

func removeCondition(status *apps.DeploymentStatus, t apps.DeploymentConditionType) {
	status.Conditions = filterOutCondition(status.Conditions, t)
}

func filterOutCondition(conds []apps.DeploymentCondition, t apps.DeploymentConditionType) []apps.DeploymentCondition {
	var out []apps.DeploymentCondition
	for _, c := range conds {
		if c.Type != t {
			out = append(out, c)
		}
	}
	return out
}

func replicaSetToDeploymentCondition(c apps.ReplicaSetCondition) apps.DeploymentCondition {
	return apps.DeploymentCondition{Type: apps.DeploymentConditionType(c.Type), Status: c.Status,
		LastTransitionTime: c.LastTransitionTime, LastUpdateTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message}
}

func setDeploymentRevision(d *apps.Deployment, revision string) bool {
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	if d.Annotations[RevisionAnnotation] != revision {
		d.Annotations[RevisionAnnotation] = revision
		return true
	}
	return false
}

func revision(rs *apps.ReplicaSet) (int64, error) {
	v, ok := rs.Annotations[RevisionAnnotation]
	if !ok {
		return 0, nil
	}
	return strconv.ParseInt(v, 10, 64)
}

func maxRevision(rss []*apps.ReplicaSet) int64 {
	var m int64
	for _, rs := range rss {
		if v, err := revision(rs); err == nil && v > m {
			m = v
		}
	}
	return m
}

var annotationsToSkip = map[string]bool{
	v1.LastAppliedConfigAnnotation: true,
	RevisionAnnotation:             true,
	RevisionHistoryAnnotation:      true,
	DesiredReplicasAnnotation:      true,
	MaxReplicasAnnotation:          true,
	apps.DeprecatedRollbackTo:      true,
}

func copyDeploymentAnnotationsToReplicaSet(d *apps.Deployment, rs *apps.ReplicaSet) bool {
	changed := false
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	for k, v := range d.Annotations {
		if cur, exist := rs.Annotations[k]; annotationsToSkip[k] || (exist && cur == v) {
			continue
		}
		rs.Annotations[k] = v
		changed = true
	}
	return changed
}

// setNewReplicaSetAnnotations sets the revision (keeping a history) and, for
// a replica set being created, the desired/max replicas annotations.
func setNewReplicaSetAnnotations(d *apps.Deployment, rs *apps.ReplicaSet, newRevision string, exists bool) bool {
	changed := copyDeploymentAnnotationsToReplicaSet(d, rs)
	oldRevision, ok := rs.Annotations[RevisionAnnotation]
	oldInt, err := strconv.ParseInt(oldRevision, 10, 64)
	if err != nil {
		if oldRevision != "" {
			return false
		}
		oldInt = 0
	}
	newInt, err := strconv.ParseInt(newRevision, 10, 64)
	if err != nil {
		return false
	}
	if oldInt < newInt {
		rs.Annotations[RevisionAnnotation] = newRevision
		changed = true
	}
	if ok && oldInt < newInt {
		history := rs.Annotations[RevisionHistoryAnnotation]
		olds := splitComma(history)
		if len(olds) == 0 {
			rs.Annotations[RevisionHistoryAnnotation] = oldRevision
		} else {
			total, start := len(history)+len(oldRevision)+1, 0
			for total > maxRevHistoryLengthInChars && start < len(olds) {
				total -= len(olds[start]) + 1
				start++
			}
			if total <= maxRevHistoryLengthInChars {
				rs.Annotations[RevisionHistoryAnnotation] = joinComma(append(olds[start:], oldRevision))
			}
		}
	}
	if !exists && setReplicasAnnotations(rs, *d.Spec.Replicas, *d.Spec.Replicas+maxSurge(d)) {
		changed = true
	}
	return changed
}

func splitComma(s string) []string {
	if s == "" {
		return nil
	}
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}

func joinComma(parts []string) string {
	s := ""
	for i, p := range parts {
		if i > 0 {
			s += ","
		}
		s += p
	}
	return s
}

func setReplicasAnnotations(rs *apps.ReplicaSet, desired, maxReplicas int32) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	changed := false
	if s := fmt.Sprintf("%d", desired); rs.Annotations[DesiredReplicasAnnotation] != s {
		rs.Annotations[DesiredReplicasAnnotation] = s
		changed = true
	}
	if s := fmt.Sprintf("%d", maxReplicas); rs.Annotations[MaxReplicasAnnotation] != s {
		rs.Annotations[MaxReplicasAnnotation] = s
		changed = true
	}
	return changed
}

func replicasAnnotationsNeedUpdate(rs *apps.ReplicaSet, desired, maxReplicas int32) bool {
	return rs.Annotations == nil ||
		rs.Annotations[DesiredReplicasAnnotation] != fmt.Sprintf("%d", desired) ||
		rs.Annotations[MaxReplicasAnnotation] != fmt.Sprintf("%d", maxReplicas)
}

func nonNegativeAnnotation(rs *apps.ReplicaSet, key string) (int32, bool) {
	v, ok := rs.Annotations[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil || n > math.MaxInt32 {
		return 0, false
	}
	return int32(n), true
}

func isRollingUpdate(d *apps.Deployment) bool {
	return d.Spec.Strategy.Type == apps.RollingUpdateDeploymentStrategyType
}

// resolveFenceposts turns maxSurge and maxUnavailable into numbers for
// desired replicas: surge rounds up, unavailable down, and both zero means
// one unavailable.
func resolveFenceposts(surgeVal, unavailableVal *intstrutil.IntOrString, desired int32) (int32, int32, error) {
	surge, err := intstrutil.GetScaledValueFromIntOrPercent(intstrutil.ValueOrDefault(surgeVal, intstrutil.FromInt32(0)), int(desired), true)
	if err != nil {
		return 0, 0, err
	}
	unavailable, err := intstrutil.GetScaledValueFromIntOrPercent(intstrutil.ValueOrDefault(unavailableVal, intstrutil.FromInt32(0)), int(desired), false)
	if err != nil {
		return 0, 0, err
	}
	if surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	return int32(surge), int32(unavailable), nil
}

func maxUnavailable(d *apps.Deployment) int32 {
	if !isRollingUpdate(d) || *d.Spec.Replicas == 0 || d.Spec.Strategy.RollingUpdate == nil {
		return 0
	}
	_, u, _ := resolveFenceposts(d.Spec.Strategy.RollingUpdate.MaxSurge, d.Spec.Strategy.RollingUpdate.MaxUnavailable, *d.Spec.Replicas)
	return min(u, *d.Spec.Replicas)
}

func maxSurge(d *apps.Deployment) int32 {
	if !isRollingUpdate(d) || d.Spec.Strategy.RollingUpdate == nil {
		return 0
	}
	s, _, _ := resolveFenceposts(d.Spec.Strategy.RollingUpdate.MaxSurge, d.Spec.Strategy.RollingUpdate.MaxUnavailable, *d.Spec.Replicas)
	return s
}

func replicaSetProportion(rs *apps.ReplicaSet, d *apps.Deployment, toAdd, added int32) int32 {
	if rs == nil || *rs.Spec.Replicas == 0 || toAdd == 0 || toAdd == added {
		return 0
	}
	fraction := replicaSetFraction(rs, d)
	allowed := toAdd - added
	if toAdd > 0 {
		return min(fraction, allowed)
	}
	return max(fraction, allowed)
}

func replicaSetFraction(rs *apps.ReplicaSet, d *apps.Deployment) int32 {
	if *d.Spec.Replicas == 0 {
		return -*rs.Spec.Replicas
	}
	deploymentMax := *d.Spec.Replicas + maxSurge(d)
	before, ok := nonNegativeAnnotation(rs, MaxReplicasAnnotation)
	if !ok || before == 0 {
		before = d.Status.Replicas
		if before == 0 {
			return 0
		}
	}
	size := float64(*rs.Spec.Replicas*deploymentMax) / float64(before)
	return int32(math.Round(size)) - *rs.Spec.Replicas
}

func equalIgnoreHash(t1, t2 *v1.PodTemplateSpec) bool {
	c1, c2 := t1.DeepCopy(), t2.DeepCopy()
	delete(c1.Labels, apps.DefaultDeploymentUniqueLabelKey)
	delete(c2.Labels, apps.DefaultDeploymentUniqueLabelKey)
	return apiequality.Semantic.DeepEqual(c1, c2)
}

// findNewReplicaSet returns the oldest replica set whose template equals the
// deployment's, ignoring the hash label.
func findNewReplicaSet(d *apps.Deployment, rss []*apps.ReplicaSet) *apps.ReplicaSet {
	sort.Sort(controllerutil.ReplicaSetsByCreationTimestamp(rss))
	for _, rs := range rss {
		if equalIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			return rs
		}
	}
	return nil
}

// findOldReplicaSets returns every replica set but the new one.
func findOldReplicaSets(d *apps.Deployment, rss []*apps.ReplicaSet) []*apps.ReplicaSet {
	newRS := findNewReplicaSet(d, rss)
	var out []*apps.ReplicaSet
	for _, rs := range rss {
		if newRS == nil || rs.UID != newRS.UID {
			out = append(out, rs)
		}
	}
	return out
}

func findActiveOrLatest(newRS *apps.ReplicaSet, oldRSs []*apps.ReplicaSet) *apps.ReplicaSet {
	if newRS == nil && len(oldRSs) == 0 {
		return nil
	}
	sort.Sort(sort.Reverse(controllerutil.ReplicaSetsByCreationTimestamp(oldRSs)))
	all := controllerutil.FilterActiveReplicaSets(append(oldRSs, newRS))
	switch len(all) {
	case 0:
		if newRS != nil {
			return newRS
		}
		return oldRSs[0]
	case 1:
		return all[0]
	}
	return nil
}

func sumReplicas(rss []*apps.ReplicaSet, f func(*apps.ReplicaSet) int32) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += f(rs)
		}
	}
	return n
}

func specReplicas(rss []*apps.ReplicaSet) int32 {
	return sumReplicas(rss, func(rs *apps.ReplicaSet) int32 { return *rs.Spec.Replicas })
}

func actualReplicas(rss []*apps.ReplicaSet) int32 {
	return sumReplicas(rss, func(rs *apps.ReplicaSet) int32 { return rs.Status.Replicas })
}

func readyReplicas(rss []*apps.ReplicaSet) int32 {
	return sumReplicas(rss, func(rs *apps.ReplicaSet) int32 { return rs.Status.ReadyReplicas })
}

func availableReplicas(rss []*apps.ReplicaSet) int32 {
	return sumReplicas(rss, func(rs *apps.ReplicaSet) int32 { return rs.Status.AvailableReplicas })
}

func deploymentComplete(d *apps.Deployment, s *apps.DeploymentStatus) bool {
	return s.UpdatedReplicas == *d.Spec.Replicas && s.Replicas == *d.Spec.Replicas &&
		s.AvailableReplicas == *d.Spec.Replicas && s.ObservedGeneration >= d.Generation
}

func deploymentProgressing(d *apps.Deployment, s *apps.DeploymentStatus) bool {
	old := d.Status
	return s.UpdatedReplicas > old.UpdatedReplicas ||
		s.Replicas-s.UpdatedReplicas < old.Replicas-old.UpdatedReplicas ||
		s.ReadyReplicas > old.ReadyReplicas ||
		s.AvailableReplicas > old.AvailableReplicas
}

func hasProgressDeadline(d *apps.Deployment) bool {
	return d.Spec.ProgressDeadlineSeconds != nil && *d.Spec.ProgressDeadlineSeconds != math.MaxInt32
}

func hasRevisionHistoryLimit(d *apps.Deployment) bool {
	return d.Spec.RevisionHistoryLimit != nil && *d.Spec.RevisionHistoryLimit != math.MaxInt32
}

func deploymentTimedOut(d *apps.Deployment, s *apps.DeploymentStatus, now time.Time) bool {
	if !hasProgressDeadline(d) {
		return false
	}
	c := getCondition(*s, apps.DeploymentProgressing)
	if c == nil || c.Reason == NewRSAvailableReason {
		return false
	}
	if c.Reason == TimedOutReason {
		return true
	}
	return c.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second).Before(now)
}

// newRSNewReplicas is how many replicas the new replica set may have now.
func newRSNewReplicas(d *apps.Deployment, all []*apps.ReplicaSet, newRS *apps.ReplicaSet) (int32, error) {
	switch d.Spec.Strategy.Type {
	case apps.RollingUpdateDeploymentStrategyType:
		var surgeVal *intstrutil.IntOrString
		if d.Spec.Strategy.RollingUpdate != nil {
			surgeVal = d.Spec.Strategy.RollingUpdate.MaxSurge
		}
		surge, err := intstrutil.GetScaledValueFromIntOrPercent(intstrutil.ValueOrDefault(surgeVal, intstrutil.FromInt32(0)), int(*d.Spec.Replicas), true)
		if err != nil {
			return 0, err
		}
		current := specReplicas(all)
		maxTotal := *d.Spec.Replicas + int32(surge)
		if current >= maxTotal {
			return *newRS.Spec.Replicas, nil
		}
		up := min(maxTotal-current, *d.Spec.Replicas-*newRS.Spec.Replicas)
		return *newRS.Spec.Replicas + up, nil
	case apps.RecreateDeploymentStrategyType:
		return *d.Spec.Replicas, nil
	}
	return 0, fmt.Errorf("deployment type %v isn't supported", d.Spec.Strategy.Type)
}

func isSaturated(d *apps.Deployment, rs *apps.ReplicaSet) bool {
	if rs == nil {
		return false
	}
	desired, err := strconv.Atoi(rs.Annotations[DesiredReplicasAnnotation])
	if err != nil {
		return false
	}
	return *rs.Spec.Replicas == *d.Spec.Replicas && int32(desired) == *d.Spec.Replicas &&
		rs.Status.AvailableReplicas == *d.Spec.Replicas
}

// replicaSetsByRevision sorts by revision, creation time breaking ties.
type replicaSetsByRevision []*apps.ReplicaSet

func (o replicaSetsByRevision) Len() int      { return len(o) }
func (o replicaSetsByRevision) Swap(i, j int) { o[i], o[j] = o[j], o[i] }
func (o replicaSetsByRevision) Less(i, j int) bool {
	r1, err1 := revision(o[i])
	r2, err2 := revision(o[j])
	if err1 != nil || err2 != nil || r1 == r2 {
		return controllerutil.ReplicaSetsByCreationTimestamp(o).Less(i, j)
	}
	return r1 < r2
}
