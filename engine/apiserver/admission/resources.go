package admission

import (
	corev1 "k8s.io/api/core/v1"
)

// podRequests sums the containers' requests and takes the larger of that and
// each init container's (sidecars count toward both), as upstream's
// PodRequests does for the spec.
func podRequests(pod *corev1.Pod) corev1.ResourceList {
	return podAggregate(pod, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Requests })
}

// podLimits is podRequests for limits.
func podLimits(pod *corev1.Pod) corev1.ResourceList {
	return podAggregate(pod, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Limits })
}

func podAggregate(pod *corev1.Pod, list func(*corev1.Container) corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := range pod.Spec.Containers {
		addResourceList(out, list(&pod.Spec.Containers[i]))
	}
	sidecars := corev1.ResourceList{}
	inits := corev1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		l := list(c)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			addResourceList(out, l)
			addResourceList(sidecars, l)
			l = sidecars
		} else {
			tmp := corev1.ResourceList{}
			addResourceList(tmp, l)
			addResourceList(tmp, sidecars)
			l = tmp
		}
		maxResourceList(inits, l)
	}
	maxResourceList(out, inits)
	if pod.Spec.Overhead != nil && len(out) > 0 {
		for name, q := range pod.Spec.Overhead {
			if v, ok := out[name]; ok {
				v.Add(q)
				out[name] = v
			}
		}
	}
	return out
}

func addResourceList(list, add corev1.ResourceList) {
	for name, q := range add {
		if v, ok := list[name]; ok {
			v.Add(q)
			list[name] = v
		} else {
			list[name] = q.DeepCopy()
		}
	}
}

func maxResourceList(list, other corev1.ResourceList) {
	for name, q := range other {
		if v, ok := list[name]; !ok || q.Cmp(v) > 0 {
			list[name] = q.DeepCopy()
		}
	}
}
