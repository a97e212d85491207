package rows

import (
	corev1 "k8s.io/api/core/v1"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"

	"github.com/podtrace/podtrace/stages"
)

// podDone lists the stages of a pod's way up that its object shows
// finished, from its conditions and container statuses:
//
//   - PodScheduled=True: schedule and bind;
//   - PodReadyToStartContainers=True: the kubelet's sync, the sandbox and
//     its network;
//   - every container's image resolved (an imageID): pull;
//   - every container running, or terminated after it ran: create and start;
//   - Ready=True: ready.
func podDone(p *corev1.Pod) []stages.ID {
	var done []stages.ID
	condition := func(t corev1.PodConditionType) bool {
		_, c := podutil.GetPodConditionFromList(p.Status.Conditions, t)
		return c != nil && c.Status == corev1.ConditionTrue
	}
	if condition(corev1.PodScheduled) {
		done = append(done, stages.Schedule, stages.Bind)
	}
	if condition(corev1.PodReadyToStartContainers) {
		done = append(done, stages.Kubelet, stages.Sandbox, stages.CNI)
	}
	statuses := p.Status.ContainerStatuses
	if len(statuses) == 0 || len(statuses) < len(p.Spec.Containers) {
		return done
	}
	pulled, started := true, true
	for _, s := range statuses {
		pulled = pulled && s.ImageID != ""
		// A container that never ran (StartError) has no start time.
		started = started && (s.State.Running != nil || s.State.Terminated != nil && !s.State.Terminated.StartedAt.IsZero())
	}
	if pulled {
		done = append(done, stages.Pull)
	}
	if started {
		done = append(done, stages.Create, stages.Start)
	}
	if condition(corev1.PodReady) {
		done = append(done, stages.Ready)
	}
	return done
}
