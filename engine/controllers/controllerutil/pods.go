package controllerutil

import (
	"fmt"
	"math"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IsPodActive reports whether the pod has not terminated and is not being deleted.
func IsPodActive(p *v1.Pod) bool {
	return v1.PodSucceeded != p.Status.Phase && v1.PodFailed != p.Status.Phase && p.DeletionTimestamp == nil
}

// FilterActivePods returns the pods that are active.
func FilterActivePods(pods []*v1.Pod) []*v1.Pod {
	var out []*v1.Pod
	for _, p := range pods {
		if IsPodActive(p) {
			out = append(out, p)
		}
	}
	return out
}

// PodReadyCondition returns the pod's Ready condition, or nil.
func PodReadyCondition(pod *v1.Pod) *v1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == v1.PodReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// IsPodReady reports whether the pod's Ready condition is True.
func IsPodReady(pod *v1.Pod) bool {
	c := PodReadyCondition(pod)
	return c != nil && c.Status == v1.ConditionTrue
}

// IsPodAvailable reports whether the pod has been ready for at least
// minReadySeconds at now.
func IsPodAvailable(pod *v1.Pod, minReadySeconds int32, now time.Time) bool {
	if !IsPodReady(pod) {
		return false
	}
	c := PodReadyCondition(pod)
	min := time.Duration(minReadySeconds) * time.Second
	return minReadySeconds == 0 || (!c.LastTransitionTime.IsZero() && c.LastTransitionTime.Add(min).Before(now))
}

// PodKey returns "namespace/name".
func PodKey(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }

// PodsPrefix returns the generateName for pods of the named controller:
// "name-" unless that is too long to be a pod name.
func PodsPrefix(controllerName string) string {
	prefix := controllerName + "-"
	if len(validation.NameIsDNSSubdomain(prefix, true)) != 0 {
		prefix = controllerName
	}
	return prefix
}

// PodFromTemplate builds the pod a controller creates from its template:
// labels, annotations and finalizers copied, generateName "<owner>-", the
// controller reference, and the template's spec.
func PodFromTemplate(template *v1.PodTemplateSpec, ownerName string, controllerRef *metav1.OwnerReference) (*v1.Pod, error) {
	if err := validateControllerRef(controllerRef); err != nil {
		return nil, err
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{
		Labels:       copyMap(template.Labels),
		Annotations:  copyMap(template.Annotations),
		GenerateName: PodsPrefix(ownerName),
		Finalizers:   append([]string{}, template.Finalizers...),
	}}
	pod.OwnerReferences = append(pod.OwnerReferences, *controllerRef)
	pod.Spec = *template.Spec.DeepCopy()
	if len(pod.Labels) == 0 {
		return nil, fmt.Errorf("unable to create pods, no labels")
	}
	return pod, nil
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func validateControllerRef(ref *metav1.OwnerReference) error {
	switch {
	case ref == nil:
		return fmt.Errorf("controllerRef is nil")
	case ref.APIVersion == "":
		return fmt.Errorf("controllerRef has empty APIVersion")
	case ref.Kind == "":
		return fmt.Errorf("controllerRef has empty Kind")
	case ref.Controller == nil || !*ref.Controller:
		return fmt.Errorf("controllerRef.Controller is not set to true")
	case ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion:
		return fmt.Errorf("controllerRef.BlockOwnerDeletion is not set")
	}
	return nil
}

var podPhaseToOrdinal = map[v1.PodPhase]int{v1.PodPending: 0, v1.PodUnknown: 1, v1.PodRunning: 2}

// RankedPods orders pods for deletion like upstream's ActivePodsWithRanks
// (with the PodDeletionCost and LogarithmicScaleDown gates on): the first
// pods are the ones to delete first. Rank[i] counts the related active pods
// on Pods[i]'s node.
type RankedPods struct {
	Pods []*v1.Pod
	Rank []int
	Now  metav1.Time
}

// Len implements sort.Interface.
func (s RankedPods) Len() int { return len(s.Pods) }

// Swap implements sort.Interface.
func (s RankedPods) Swap(i, j int) {
	s.Pods[i], s.Pods[j] = s.Pods[j], s.Pods[i]
	s.Rank[i], s.Rank[j] = s.Rank[j], s.Rank[i]
}

// Less reports whether pod i should be deleted before pod j.
func (s RankedPods) Less(i, j int) bool {
	pi, pj := s.Pods[i], s.Pods[j]
	// 1. Unassigned < assigned
	if pi.Spec.NodeName != pj.Spec.NodeName && (pi.Spec.NodeName == "" || pj.Spec.NodeName == "") {
		return pi.Spec.NodeName == ""
	}
	// 2. PodPending < PodUnknown < PodRunning
	if podPhaseToOrdinal[pi.Status.Phase] != podPhaseToOrdinal[pj.Status.Phase] {
		return podPhaseToOrdinal[pi.Status.Phase] < podPhaseToOrdinal[pj.Status.Phase]
	}
	// 3. Not ready < ready
	if IsPodReady(pi) != IsPodReady(pj) {
		return !IsPodReady(pi)
	}
	// 4. lower pod-deletion-cost < higher pod-deletion cost
	if ci, cj := deletionCost(pi), deletionCost(pj); ci != cj {
		return ci < cj
	}
	// 5. Doubled up < not doubled up
	if s.Rank[i] != s.Rank[j] {
		return s.Rank[i] > s.Rank[j]
	}
	// 6. Been ready for empty time < less time < more time
	if IsPodReady(pi) && IsPodReady(pj) {
		r1, r2 := podReadyTime(pi), podReadyTime(pj)
		if !r1.Equal(r2) {
			if s.Now.IsZero() || r1.IsZero() || r2.IsZero() {
				return afterOrZero(r1, r2)
			}
			if d := logarithmicRankDiff(*r1, *r2, s.Now); d != 0 {
				return d < 0
			}
			return pi.UID < pj.UID
		}
	}
	// 7. Pods with containers with higher restart counts < lower restart counts
	if ri, rj := maxRestarts(pi), maxRestarts(pj); ri != rj {
		return ri > rj
	}
	// 8. Empty creation time pods < newer pods < older pods
	if !pi.CreationTimestamp.Equal(&pj.CreationTimestamp) {
		if s.Now.IsZero() || pi.CreationTimestamp.IsZero() || pj.CreationTimestamp.IsZero() {
			return afterOrZero(&pi.CreationTimestamp, &pj.CreationTimestamp)
		}
		if d := logarithmicRankDiff(pi.CreationTimestamp, pj.CreationTimestamp, s.Now); d != 0 {
			return d < 0
		}
		return pi.UID < pj.UID
	}
	return false
}

// deletionCost reads controller.kubernetes.io/pod-deletion-cost; invalid or
// missing values count as 0.
func deletionCost(pod *v1.Pod) int32 {
	v, ok := pod.Annotations["controller.kubernetes.io/pod-deletion-cost"]
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0
	}
	return int32(n)
}

func afterOrZero(t1, t2 *metav1.Time) bool {
	if t1.Time.IsZero() || t2.Time.IsZero() {
		return t1.Time.IsZero()
	}
	return t1.After(t2.Time)
}

func logarithmicRankDiff(t1, t2, now metav1.Time) int64 {
	d1, d2 := now.Sub(t1.Time), now.Sub(t2.Time)
	r1, r2 := int64(-1), int64(-1)
	if d1 > 0 {
		r1 = int64(math.Log2(float64(d1)))
	}
	if d2 > 0 {
		r2 = int64(math.Log2(float64(d2)))
	}
	return r1 - r2
}

func podReadyTime(pod *v1.Pod) *metav1.Time {
	if c := PodReadyCondition(pod); c != nil && c.Status == v1.ConditionTrue {
		return &c.LastTransitionTime
	}
	return &metav1.Time{}
}

func maxRestarts(pod *v1.Pod) int32 {
	var n int32
	for _, c := range pod.Status.ContainerStatuses {
		n = max(n, c.RestartCount)
	}
	return n
}

// Reasons of the events controllers record about pods, as upstream.
const (
	FailedCreatePodReason     = "FailedCreate"
	SuccessfulCreatePodReason = "SuccessfulCreate"
	FailedDeletePodReason     = "FailedDelete"
	SuccessfulDeletePodReason = "SuccessfulDelete"
)
