// Package status computes a pod's API status the way the kubelet does
// (phase, the five pod conditions, container statuses) and writes it to
// pods/status through a Manager that coalesces updates, so that a pod's way
// to Ready costs few writes.
package status

import (
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition reasons, as pkg/kubelet/status/generate.go names them.
const (
	UnknownContainerStatuses = "UnknownContainerStatuses"
	PodCompleted             = "PodCompleted"
	PodFailed                = "PodFailed"
	ContainersNotReady       = "ContainersNotReady"
	ContainersNotInitialized = "ContainersNotInitialized"
	ReadinessGatesNotReady   = "ReadinessGatesNotReady"
)

// Phase computes the pod phase from its container statuses, following the
// kubelet's getPhase: init containers not done keep it Pending (a failed one
// with restartPolicy Never fails it); waiting containers keep it Pending unless
// they ran before (a crash loop is Running); all stopped ends it Succeeded or
// Failed by restartPolicy.
func Phase(spec *v1.PodSpec, initStatuses, statuses []v1.ContainerStatus) v1.PodPhase {
	pendingInit := 0
	for _, c := range spec.InitContainers {
		st, ok := find(initStatuses, c.Name)
		if !ok {
			pendingInit++
			continue
		}
		switch {
		case st.State.Terminated != nil && st.State.Terminated.ExitCode == 0:
		case st.State.Terminated != nil:
			if spec.RestartPolicy == v1.RestartPolicyNever {
				return v1.PodFailed
			}
			pendingInit++
		case st.State.Waiting != nil && st.LastTerminationState.Terminated != nil &&
			st.LastTerminationState.Terminated.ExitCode != 0 && spec.RestartPolicy == v1.RestartPolicyNever:
			return v1.PodFailed
		default:
			pendingInit++
		}
	}
	var unknown, running, waiting, stopped, succeeded int
	for _, c := range spec.Containers {
		st, ok := find(statuses, c.Name)
		if !ok {
			unknown++
			continue
		}
		switch {
		case st.State.Running != nil:
			running++
		case st.State.Terminated != nil:
			stopped++
			if st.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case st.State.Waiting != nil:
			if st.LastTerminationState.Terminated != nil {
				stopped++
			} else {
				waiting++
			}
		default:
			unknown++
		}
	}
	switch {
	case pendingInit > 0:
		return v1.PodPending
	case waiting > 0:
		return v1.PodPending
	case running > 0 && unknown == 0:
		return v1.PodRunning
	case running == 0 && stopped > 0 && unknown == 0:
		if spec.RestartPolicy == v1.RestartPolicyAlways {
			return v1.PodRunning
		}
		if stopped == succeeded {
			return v1.PodSucceeded
		}
		if spec.RestartPolicy == v1.RestartPolicyNever {
			return v1.PodFailed
		}
		return v1.PodRunning
	}
	return v1.PodPending
}

func find(statuses []v1.ContainerStatus, name string) (v1.ContainerStatus, bool) {
	for _, s := range statuses {
		if s.Name == name {
			return s, true
		}
	}
	return v1.ContainerStatus{}, false
}

// Conditions returns PodReadyToStartContainers, Initialized, Ready and
// ContainersReady as the kubelet generates them, keeping the scheduler's
// PodScheduled from old.
func Conditions(pod *v1.Pod, phase v1.PodPhase, sandboxReady bool, initStatuses, statuses []v1.ContainerStatus) []v1.PodCondition {
	var out []v1.PodCondition
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled {
			out = append(out, c)
		}
	}
	rts := v1.PodCondition{Type: v1.PodReadyToStartContainers, Status: v1.ConditionFalse}
	if sandboxReady {
		rts.Status = v1.ConditionTrue
	}
	out = append(out, rts, initialized(pod, phase, initStatuses, statuses))
	cr := containersReady(pod, phase, statuses)
	ready := cr
	ready.Type = v1.PodReady
	out = append(out, ready, cr)
	return out
}

func initialized(pod *v1.Pod, phase v1.PodPhase, initStatuses, statuses []v1.ContainerStatus) v1.PodCondition {
	var unknown, incomplete []string
	for _, c := range pod.Spec.InitContainers {
		st, ok := find(initStatuses, c.Name)
		if !ok {
			unknown = append(unknown, c.Name)
			continue
		}
		if !st.Ready {
			incomplete = append(incomplete, c.Name)
		}
	}
	if phase == v1.PodSucceeded && len(unknown) == 0 {
		return v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue, Reason: PodCompleted}
	}
	for _, st := range statuses {
		if st.State.Running != nil || st.State.Terminated != nil || st.LastTerminationState.Terminated != nil {
			return v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue}
		}
	}
	var msgs []string
	if len(unknown) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with unknown status: %s", unknown))
	}
	if len(incomplete) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with incomplete status: %s", incomplete))
	}
	if len(msgs) > 0 {
		return v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionFalse, Reason: ContainersNotInitialized, Message: strings.Join(msgs, ", ")}
	}
	return v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue}
}

func containersReady(pod *v1.Pod, phase v1.PodPhase, statuses []v1.ContainerStatus) v1.PodCondition {
	switch phase {
	case v1.PodSucceeded:
		return v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: PodCompleted}
	case v1.PodFailed:
		return v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: PodFailed}
	}
	var unknown, unready []string
	for _, c := range pod.Spec.Containers {
		st, ok := find(statuses, c.Name)
		switch {
		case !ok:
			unknown = append(unknown, c.Name)
		case !st.Ready:
			unready = append(unready, c.Name)
		}
	}
	var msgs []string
	if len(unknown) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with unknown status: %s", unknown))
	}
	if len(unready) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with unready status: %s", unready))
	}
	if len(msgs) > 0 {
		return v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: ContainersNotReady, Message: strings.Join(msgs, ", ")}
	}
	return v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionTrue}
}

// StampTransitions sets each condition's LastTransitionTime: kept from old
// when its status did not change, now otherwise (probe times are left zero,
// as the kubelet leaves them).
func StampTransitions(old, conds []v1.PodCondition, now time.Time) {
	for i := range conds {
		conds[i].LastTransitionTime = metav1.NewTime(now)
		for _, o := range old {
			if o.Type == conds[i].Type && o.Status == conds[i].Status {
				conds[i].LastTransitionTime = o.LastTransitionTime
			}
		}
	}
}

// QOSClass computes the pod's QoS class as pkg/apis/core/helper/qos does:
// Guaranteed when every container has equal cpu and memory requests and
// limits, BestEffort when none has any, Burstable otherwise.
func QOSClass(pod *v1.Pod) v1.PodQOSClass {
	requests, limits := v1.ResourceList{}, v1.ResourceList{}
	zero := true
	guaranteed := true
	all := append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	for _, c := range all {
		for name, q := range c.Resources.Requests {
			if name != v1.ResourceCPU && name != v1.ResourceMemory || q.IsZero() {
				continue
			}
			zero = false
			if cur, ok := requests[name]; ok {
				q.Add(cur)
			}
			requests[name] = q
		}
		found := map[v1.ResourceName]bool{}
		for name, q := range c.Resources.Limits {
			if name != v1.ResourceCPU && name != v1.ResourceMemory || q.IsZero() {
				continue
			}
			zero = false
			found[name] = true
			if cur, ok := limits[name]; ok {
				q.Add(cur)
			}
			limits[name] = q
		}
		if !found[v1.ResourceCPU] || !found[v1.ResourceMemory] {
			guaranteed = false
		}
	}
	if zero {
		return v1.PodQOSBestEffort
	}
	if guaranteed {
		for name, req := range requests {
			if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
				guaranteed = false
			}
		}
	}
	if guaranteed && len(limits) == 2 {
		return v1.PodQOSGuaranteed
	}
	return v1.PodQOSBurstable
}

// CgroupPath returns the pod's cgroup as the kubelet's cgroupfs driver names
// it: /kubepods/pod<uid> for Guaranteed, /kubepods/burstable/pod<uid>,
// /kubepods/besteffort/pod<uid>.
func CgroupPath(qos v1.PodQOSClass, uid string) string {
	switch qos {
	case v1.PodQOSGuaranteed:
		return "/kubepods/pod" + uid
	case v1.PodQOSBestEffort:
		return "/kubepods/besteffort/pod" + uid
	}
	return "/kubepods/burstable/pod" + uid
}
