package framework

import (
	v1 "k8s.io/api/core/v1"
)

// Defaults kube-scheduler assumes for containers without requests, when
// scoring (never when filtering).
const (
	DefaultMilliCPURequest int64 = 100               // 0.1 core
	DefaultMemoryRequest   int64 = 200 * 1024 * 1024 // 200 MB
)

// Resource is an amount of compute resources.
type Resource struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
	// AllowedPodNumber is the pods capacity, for allocatable resources.
	AllowedPodNumber int
	// Scalar holds extended resources (e.g. nvidia.com/gpu), in their units.
	Scalar map[v1.ResourceName]int64
}

// NewResource converts a ResourceList.
func NewResource(rl v1.ResourceList) *Resource {
	r := &Resource{}
	r.Add(rl)
	return r
}

// Add adds the quantities of rl.
func (r *Resource) Add(rl v1.ResourceList) {
	for name, q := range rl {
		switch name {
		case v1.ResourceCPU:
			r.MilliCPU += q.MilliValue()
		case v1.ResourceMemory:
			r.Memory += q.Value()
		case v1.ResourceEphemeralStorage:
			r.EphemeralStorage += q.Value()
		case v1.ResourcePods:
			r.AllowedPodNumber += int(q.Value())
		default:
			if isScalar(name) {
				if r.Scalar == nil {
					r.Scalar = map[v1.ResourceName]int64{}
				}
				r.Scalar[name] += q.Value()
			}
		}
	}
}

// SetMax raises each quantity of r to at least that of rl.
func (r *Resource) SetMax(rl v1.ResourceList) {
	other := NewResource(rl)
	r.MilliCPU = max(r.MilliCPU, other.MilliCPU)
	r.Memory = max(r.Memory, other.Memory)
	r.EphemeralStorage = max(r.EphemeralStorage, other.EphemeralStorage)
	for n, v := range other.Scalar {
		if r.Scalar == nil {
			r.Scalar = map[v1.ResourceName]int64{}
		}
		r.Scalar[n] = max(r.Scalar[n], v)
	}
}

func (r *Resource) addResource(o *Resource, sign int64) {
	r.MilliCPU += sign * o.MilliCPU
	r.Memory += sign * o.Memory
	r.EphemeralStorage += sign * o.EphemeralStorage
	for n, v := range o.Scalar {
		if r.Scalar == nil {
			r.Scalar = map[v1.ResourceName]int64{}
		}
		r.Scalar[n] += sign * v
	}
}

// Clone returns a deep copy.
func (r *Resource) Clone() *Resource {
	c := *r
	if r.Scalar != nil {
		c.Scalar = make(map[v1.ResourceName]int64, len(r.Scalar))
		for k, v := range r.Scalar {
			c.Scalar[k] = v
		}
	}
	return &c
}

// IsZero reports whether no resource is requested.
func (r *Resource) IsZero() bool {
	if r.MilliCPU != 0 || r.Memory != 0 || r.EphemeralStorage != 0 {
		return false
	}
	for _, v := range r.Scalar {
		if v != 0 {
			return false
		}
	}
	return true
}

// isScalar reports whether name is an extended, hugepages or attachable resource.
func isScalar(name v1.ResourceName) bool {
	switch name {
	case v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage, v1.ResourcePods, v1.ResourceStorage:
		return false
	}
	return true
}

// raiseTo raises each of r's requests to o's where o's is larger.
func (r *Resource) raiseTo(o *Resource) {
	r.MilliCPU = max(r.MilliCPU, o.MilliCPU)
	r.Memory = max(r.Memory, o.Memory)
	r.EphemeralStorage = max(r.EphemeralStorage, o.EphemeralStorage)
	for n, v := range o.Scalar {
		if r.Scalar == nil {
			r.Scalar = map[v1.ResourceName]int64{}
		}
		r.Scalar[n] = max(r.Scalar[n], v)
	}
}

// PodRequests returns what the pod requests, computed as kube-scheduler does:
// the sum over regular and sidecar containers, or the largest init container
// if bigger, plus the pod overhead. With nonZero set, containers that request
// no cpu or memory count DefaultMilliCPURequest and DefaultMemoryRequest (the
// scoring view).
func PodRequests(pod *v1.Pod, nonZero bool) *Resource {
	req := &Resource{}
	sidecars := &Resource{}
	for i := range pod.Spec.Containers {
		req.addResource(containerRequests(&pod.Spec.Containers[i], nonZero), 1)
	}
	// Init containers run one at a time; restartable ones (sidecars) keep running.
	initMax := &Resource{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cr := containerRequests(c, nonZero)
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			sidecars.addResource(cr, 1)
			cr = sidecars.Clone()
		} else {
			cr.addResource(sidecars, 1)
		}
		initMax.raiseTo(cr)
	}
	req.addResource(sidecars, 1)
	req.raiseTo(initMax)
	if pod.Spec.Overhead != nil {
		req.Add(pod.Spec.Overhead)
	}
	return req
}

func containerRequests(c *v1.Container, nonZero bool) *Resource {
	r := NewResource(c.Resources.Requests)
	if nonZero {
		if _, ok := c.Resources.Requests[v1.ResourceCPU]; !ok {
			r.MilliCPU = DefaultMilliCPURequest
		}
		if _, ok := c.Resources.Requests[v1.ResourceMemory]; !ok {
			r.Memory = DefaultMemoryRequest
		}
	}
	return r
}
