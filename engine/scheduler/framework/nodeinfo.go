package framework

import (
	v1 "k8s.io/api/core/v1"
)

// PodInfo is a pod with its requests computed once.
type PodInfo struct {
	Pod *v1.Pod
	// Requested is what the pod requests (filter view).
	Requested *Resource
	// NonZeroRequested counts defaults for missing cpu/memory requests (score view).
	NonZeroRequested *Resource
}

// NewPodInfo computes the pod's requests.
func NewPodInfo(pod *v1.Pod) *PodInfo {
	return &PodInfo{Pod: pod, Requested: PodRequests(pod, false), NonZeroRequested: PodRequests(pod, true)}
}

// HostPort is one host port in use on a node.
type HostPort struct {
	IP       string
	Protocol v1.Protocol
	Port     int32
}

// NodeInfo is a node with everything the plugins need precomputed: the pods
// on it, what they request, and the host ports they use.
type NodeInfo struct {
	node *v1.Node
	// Pods lists the pods on the node, including assumed ones.
	Pods []*PodInfo
	// Requested sums the pods' requests; NonZeroRequested their scoring view.
	Requested        *Resource
	NonZeroRequested *Resource
	// Allocatable is the node's allocatable resources.
	Allocatable *Resource
	// UsedPorts holds the host ports the pods use.
	UsedPorts []HostPort
	// Generation increases on every change; snapshots copy changed nodes only.
	Generation int64
}

// NewNodeInfo returns a NodeInfo for node (which may be nil until the node is known) and pods.
func NewNodeInfo(node *v1.Node, pods ...*PodInfo) *NodeInfo {
	ni := &NodeInfo{Requested: &Resource{}, NonZeroRequested: &Resource{}, Allocatable: &Resource{}}
	if node != nil {
		ni.SetNode(node)
	}
	for _, p := range pods {
		ni.AddPod(p)
	}
	return ni
}

// Node returns the node, nil if only its pods are known yet.
func (n *NodeInfo) Node() *v1.Node { return n.node }

// SetNode sets the node and its allocatable resources.
func (n *NodeInfo) SetNode(node *v1.Node) {
	n.node = node
	n.Allocatable = NewResource(node.Status.Allocatable)
}

// AddPod adds a pod and its requests and ports.
func (n *NodeInfo) AddPod(p *PodInfo) {
	n.Pods = append(n.Pods, p)
	n.Requested.addResource(p.Requested, 1)
	n.NonZeroRequested.addResource(p.NonZeroRequested, 1)
	for _, hp := range PodHostPorts(p.Pod) {
		n.UsedPorts = append(n.UsedPorts, hp)
	}
}

// RemovePod removes the pod with pod's UID; it reports whether it was there.
func (n *NodeInfo) RemovePod(pod *v1.Pod) bool {
	for i, p := range n.Pods {
		if p.Pod.UID != pod.UID {
			continue
		}
		n.Pods[i] = n.Pods[len(n.Pods)-1]
		n.Pods = n.Pods[:len(n.Pods)-1]
		n.Requested.addResource(p.Requested, -1)
		n.NonZeroRequested.addResource(p.NonZeroRequested, -1)
		for _, hp := range PodHostPorts(p.Pod) {
			for j, u := range n.UsedPorts {
				if u == hp {
					n.UsedPorts = append(n.UsedPorts[:j], n.UsedPorts[j+1:]...)
					break
				}
			}
		}
		return true
	}
	return false
}

// Clone returns a copy that shares the (immutable) pods and node but not the slices and sums.
func (n *NodeInfo) Clone() *NodeInfo {
	return &NodeInfo{
		node:             n.node,
		Pods:             append([]*PodInfo(nil), n.Pods...),
		Requested:        n.Requested.Clone(),
		NonZeroRequested: n.NonZeroRequested.Clone(),
		Allocatable:      n.Allocatable.Clone(),
		UsedPorts:        append([]HostPort(nil), n.UsedPorts...),
		Generation:       n.Generation,
	}
}

// PodHostPorts returns the host ports the pod's containers ask for.
func PodHostPorts(pod *v1.Pod) []HostPort {
	var out []HostPort
	add := func(cs []v1.Container) {
		for _, c := range cs {
			for _, p := range c.Ports {
				if p.HostPort <= 0 {
					continue
				}
				hp := HostPort{IP: p.HostIP, Protocol: p.Protocol, Port: p.HostPort}
				if hp.IP == "" {
					hp.IP = "0.0.0.0"
				}
				if hp.Protocol == "" {
					hp.Protocol = v1.ProtocolTCP
				}
				out = append(out, hp)
			}
		}
	}
	add(pod.Spec.Containers)
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			add([]v1.Container{c})
		}
	}
	return out
}
