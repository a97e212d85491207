package cri

import (
	"context"
	"fmt"
	"net"
	"time"

	oteltrace "go.opentelemetry.io/otel/trace"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// SimulatedRuntimeName is the name podtrace's simulated runtime
// (engine/cri/sim) reports over CRI: its nodes' containerRuntimeVersion
// and its containers' IDs in pod status read podtrace-sim://..., by which
// a reader of a cluster knows podtrace's simulated nodes without naming
// the runtime's package.
const SimulatedRuntimeName = "podtrace-sim"

// Factory starts one node's container runtime; its goroutines end with
// ctx, and its errors name the node.
type Factory func(ctx context.Context, cfg Config) (Node, error)

// Host is a container runtime started once for every node of a process
// (engine/cri/runtimes starts one by name): what the engine and the node
// agents need of it.
type Host struct {
	// NewNode starts one node's runtime.
	NewNode Factory
	// Gateway, set by a runtime that runs real containers on a bridge of
	// each node's own in the host's network namespace, is the address on
	// its bridge of the node with pod range podCIDR: its pods' gateway,
	// where the node's services answer them. Nil: the pods share the
	// process's network (the simulated runtime).
	Gateway func(podCIDR *net.IPNet) net.IP
	// Close stops the runtime after its nodes: it removes every pod and
	// stops what the runtime started for them.
	Close func(ctx context.Context) error
}

// Config is what a node's runtime is built from.
type Config struct {
	// Name and PodCIDR are the node's name and pod range (10.244.1.0/24).
	Name, PodCIDR string
	// Seed makes a simulated runtime repeatable.
	Seed int64
	// Speed, when set, divides a simulated runtime's latencies.
	Speed func() float64
	// Dir is where the runtime may keep the node's files.
	Dir string
	// HostDir, for a simulated node, is its host file system under
	// podtrace's data dir, where its kubelet's hostPath volumes are (the
	// node's node.Config.HostDir); empty for a node whose host is the
	// machine.
	HostDir string
	// StateFile, when set, is where the runtime keeps its records across
	// restarts, as a node finds its containers after a reboot.
	StateFile string
	// Routes are the ranges (CIDRs) the node's pods route through their
	// gateway, the host (a runtime with real pod networks).
	Routes []string
	// KubeletTracerProvider is the node's kubelet's: a runtime client in
	// the kubelet's process shares it, so that its CRI calls nest in the
	// kubelet's spans.
	KubeletTracerProvider oteltrace.TracerProvider
	// NewTracerProvider, when set, makes a tracer provider for the
	// runtime's own spans, under the service name given; nil: the node has
	// no tracing block.
	NewTracerProvider func(service string) (oteltrace.TracerProvider, error)
	// Observer, when set, is the node's CRI seam, which the runtime tells
	// what the seam cannot see in the kubelet's CRI calls.
	Observer Observer
	// Mounts, when set, returns the file system type of what the node's
	// kubelet mounted at or above a host path ("tmpfs" for an emptyDir of
	// medium Memory), or "" when it mounted nothing there; for a runtime
	// whose kubelet only records its mounts (a simulated node), so that
	// its containers see the volume the kubelet meant. A runtime on a
	// kubelet that really mounts ignores it.
	Mounts func(hostPath string) string
}

// Node is one node's running container runtime, as its kubelet reaches it.
type Node struct {
	// Runtime and Images are the CRI services the kubelet drives.
	Runtime internalapi.RuntimeService
	Images  internalapi.ImageManagerService
	// RealContainers says the runtime runs real containers (the kubelet
	// then treats pod directories and dead containers as on a real node).
	RealContainers bool
	// Recheck, when set, makes the runtime ask its Observer's Unhealthy
	// again for every pod; the node set calls it whenever faults change.
	Recheck func()
	// Close, when set, stops the runtime (saving its records to
	// StateFile); the node set calls it at its Shutdown. A runtime without
	// one is stopped by whoever made its Factory.
	Close func(ctx context.Context) error
}

// Observer is what a node's runtime tells its CRI seam (engine/hooks/cri
// implements it). Every method may be called concurrently.
type Observer interface {
	// NetworkAdd runs add, the CNI ADD of the sandbox n describes, as the
	// pod's cni stage: it may hold it (a breakpoint) or fail it without
	// calling add (a fault). It returns add's address, or the error the
	// ADD fails with.
	NetworkAdd(ctx context.Context, n Network, add func() (ip string, err error)) (string, error)
	// NetworkDel is told what a sandbox's CNI DEL of interface ifName did
	// (err nil: it succeeded), for the sandbox's cleanup stage.
	NetworkDel(sandboxID, ifName string, took time.Duration, err error)
	// ExtraPorts names the ports a pod's application answers on besides
	// its sandbox's port mappings (those of its probes and hooks), for a
	// runtime that plays the application.
	ExtraPorts(pod *runtimeapi.PodSandboxMetadata) []int32
	// Unhealthy reports whether a pod's application should stop answering
	// (a ready fault), for a runtime that plays the application.
	Unhealthy(pod *runtimeapi.PodSandboxMetadata) bool
}

// Network is a sandbox's CNI ADD as its runtime describes it.
type Network struct {
	// Pod is the sandbox's pod as the kubelet names it; a runtime that is
	// not told the pod's UID (containerd 1.6's CNI arguments) leaves it
	// empty.
	Pod *runtimeapi.PodSandboxMetadata
	// SandboxID is the sandbox's.
	SandboxID string
	// RangeSet is the node's pod range as host-local words it
	// ("10.244.1.1-10.244.1.254"), for a cni fault's error.
	RangeSet string
	// Plugin and Name are the CNI plugin type and network name a failed
	// ADD is reported under, as libcni words it; an empty Name words it
	// as containerd 1.6 does (the plugin only).
	Plugin, Name string
	// PauseFirst says the runtime started the sandbox's pause container
	// before its network (the simulated runtime): the sandbox stage ends
	// where the cni stage begins. Else the cni stage runs inside the
	// sandbox stage, as containerd sets up the network first.
	PauseFirst bool
	// Delegating says Plugin reports for a delegate and the runtime names
	// Plugin in its own error (podtrace-cni under containerd): the error
	// NetworkAdd returns is then in the delegate's bare words.
	Delegating bool
}

// NetworkSetupError is how containerd (and the simulated runtime after
// it) words a sandbox whose CNI ADD failed.
func NetworkSetupError(sandboxID string, err error) error {
	return fmt.Errorf("failed to setup network for sandbox %q: %w", sandboxID, err)
}
