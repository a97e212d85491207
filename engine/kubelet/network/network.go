// Package network is the kubelet's view of pod networking: a CNI-shaped
// plugin that sets up a sandbox's network and returns its IP, and tears it
// down again. The simulated plugin is in network/sim.
package network

import "context"

// Pod identifies the pod and sandbox a network operation is for.
type Pod struct {
	Namespace, Name, UID string
	SandboxID            string
}

// Result is what CNI ADD reports.
type Result struct {
	// Interface is the pod-side interface name, "eth0".
	Interface string
	// IP is the pod's address; Gateway its route.
	IP, Gateway string
	// HostVeth is the host side of the veth pair.
	HostVeth string
}

// Plugin sets up and tears down pod networks (CNI ADD and DEL).
type Plugin interface {
	// SetUp attaches the sandbox to the pod network and returns its address.
	SetUp(ctx context.Context, pod Pod) (Result, error)
	// TearDown detaches the sandbox and releases its address; it is
	// idempotent.
	TearDown(ctx context.Context, pod Pod) error
}
