package cri

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubeletevents "k8s.io/kubernetes/pkg/kubelet/events"

	"github.com/podtrace/podtrace/engine/cri"
	"github.com/podtrace/podtrace/stages"
)

var _ cri.Observer = (*Hooks)(nil)

// NetworkAdd runs a runtime's CNI ADD for a sandbox as the cni stage (the
// runtime's half of engine/cri's Observer): held at breakpoints, failed by
// a cni fault with the error of NetworkError over n.RangeSet (as the plugin
// n names reports it), reported with the pod's address. A pod without a UID
// (containerd 1.6 passes none to its CNI plugins) is found by its name
// while its RunPodSandbox runs. The cni stage runs inside the sandbox
// stage, as containerd sets up a sandbox's network before it starts the
// pause container; a runtime that starts the pause container first
// (n.PauseFirst) has the sandbox stage end here.
func (h *Hooks) NetworkAdd(ctx context.Context, n cri.Network, add func() (string, error)) (string, error) {
	md := n.Pod
	if md.GetUid() == "" {
		h.mu.Lock()
		uid := h.startingUIDs[md.GetNamespace()+"/"+md.GetName()]
		h.mu.Unlock()
		md = &runtimeapi.PodSandboxMetadata{Namespace: md.GetNamespace(), Name: md.GetName(), Uid: uid}
	}
	if n.PauseFirst {
		h.sandboxUp(md.GetUid(), n.SandboxID)
	}
	if !n.Delegating {
		return h.network(ctx, md, n, add)
	}
	// A delegating plugin fails with the delegate's words, which the
	// runtime prefixes with the plugin's name; the stage names it too.
	ip, err := h.network(ctx, md, n, func() (string, error) {
		ip, err := add()
		if err != nil {
			return "", &pluginError{plugin: n.Plugin, network: n.Name, err: err}
		}
		return ip, nil
	})
	var pe *pluginError
	if errors.As(err, &pe) {
		return "", pe.err
	}
	return ip, err
}

// network is NetworkAdd's stage for the pod md.
func (h *Hooks) network(ctx context.Context, md *runtimeapi.PodSandboxMetadata, n cri.Network, add func() (string, error)) (string, error) {
	ref := h.ref(md)
	f, err := h.tr.Gate(ctx, ref, stages.CNI, RuntimeComponent)
	if err != nil {
		return "", err
	}
	span := h.tr.Begin(ref, stages.CNI, RuntimeComponent)
	if f != nil {
		err := &pluginError{plugin: n.Plugin, network: n.Name, err: NetworkError(*f, n.RangeSet)}
		span.Retry(kubeletevents.FailedCreatePodSandBox, cri.NetworkSetupError(n.SandboxID, err).Error(), time.Time{})
		return "", err
	}
	ip, err := add()
	if err != nil {
		span.Retry(kubeletevents.FailedCreatePodSandBox, cri.NetworkSetupError(n.SandboxID, err).Error(), time.Time{})
		return "", err
	}
	span.Succeed("", fmt.Sprintf("eth0 %s (CNI ADD)", ip))
	return ip, nil
}

// NetworkDel notes what a runtime's CNI DEL did, for the sandbox's
// cleanup stage.
func (h *Hooks) NetworkDel(sandboxID, ifName string, took time.Duration, err error) {
	msg := fmt.Sprintf("CNI DEL %s in %s", ifName, took.Round(100*time.Microsecond))
	if err != nil {
		msg = "CNI DEL failed: " + err.Error()
	}
	h.mu.Lock()
	h.networkDel[sandboxID] = msg
	h.mu.Unlock()
}

// sandboxUp ends the sandbox stage of the pod whose RunPodSandbox is
// running, when the runtime has started its pause container before the
// rest of the call (the simulated runtime, before its network).
func (h *Hooks) sandboxUp(uid, sandboxID string) {
	h.mu.Lock()
	up := h.starting[uid]
	h.mu.Unlock()
	if up != nil {
		up(sandboxID, nil)
	}
}

// Unhealthy reports whether a ready fault covers the pod: its simulated
// application then stops answering on its address, so the kubelet's HTTP,
// TCP and gRPC probes fail.
func (h *Hooks) Unhealthy(md *runtimeapi.PodSandboxMetadata) bool {
	ref := h.ref(md)
	for _, f := range h.tr.ActiveFaults() {
		if f.Stage == stages.Ready && (f.Kind == stages.Fail || f.Kind == stages.Flake) && f.Scope.Matches(ref.Key(), ref.Node) {
			return true
		}
	}
	return false
}

// ExtraPorts returns the ports a simulated runtime answers on for the pod
// besides those of its sandbox's port mappings (extraPorts), as the kubelet
// last saw the pod.
func (h *Hooks) ExtraPorts(md *runtimeapi.PodSandboxMetadata) []int32 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ports[md.GetUid()]
}

// extraPorts lists what the sandbox's port mappings (the app containers'
// declared ports) leave out: the declared ports of init containers
// (sidecars), and the ports of the probes and lifecycle hooks of the
// containers that declare none, whose programs' ports are known only from
// them. A container that declares its ports answers on those alone, so a
// probe of another port fails, as on a cluster (the conformance suite's
// "wrong probe port" specs). Such probes name none of its ports, so only
// numbers count.
func extraPorts(pod *v1.Pod) []int32 {
	var out []int32
	for _, c := range pod.Spec.InitContainers {
		for _, p := range c.Ports {
			out = append(out, p.ContainerPort)
		}
	}
	for _, c := range append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if len(c.Ports) > 0 {
			continue
		}
		port := func(h *v1.ProbeHandler) {
			if h == nil {
				return
			}
			switch {
			case h.HTTPGet != nil:
				out = append(out, int32(h.HTTPGet.Port.IntValue()))
			case h.TCPSocket != nil:
				out = append(out, int32(h.TCPSocket.Port.IntValue()))
			case h.GRPC != nil:
				out = append(out, h.GRPC.Port)
			}
		}
		for _, p := range []*v1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
			if p != nil {
				port(&p.ProbeHandler)
			}
		}
		if l := c.Lifecycle; l != nil {
			for _, hd := range []*v1.LifecycleHandler{l.PostStart, l.PreStop} {
				if hd != nil && hd.HTTPGet != nil {
					out = append(out, int32(hd.HTTPGet.Port.IntValue()))
				}
				if hd != nil && hd.TCPSocket != nil {
					out = append(out, int32(hd.TCPSocket.Port.IntValue()))
				}
			}
		}
	}
	return out
}
