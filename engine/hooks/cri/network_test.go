package cri

import (
	"context"
	"testing"
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/podtrace/podtrace/engine/cri"
	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

// containerdLike runs a sandbox as containerd does: the network first
// (podtrace-cni's ADD, as engine/cri/containerd tells its observer, with
// no pod UID), then the pause container, which takes pause.
type containerdLike struct {
	internalapi.RuntimeService
	obs   cri.Observer
	pause time.Duration
}

func (c *containerdLike) RunPodSandbox(ctx context.Context, cfg *runtimeapi.PodSandboxConfig, _ string) (string, error) {
	md := cfg.GetMetadata()
	n := cri.Network{Pod: &runtimeapi.PodSandboxMetadata{Namespace: md.GetNamespace(), Name: md.GetName()}, SandboxID: "sb1",
		RangeSet: "10.244.1.1-10.244.1.254", Plugin: "podtrace-cni", Delegating: true}
	_, err := c.obs.NetworkAdd(ctx, n, func() (string, error) { return "10.244.1.2/24", nil })
	if err != nil {
		return "", err
	}
	time.Sleep(c.pause)
	return "sb1", nil
}

// The seams follow the runtime's order: on containerd the sandbox stage is
// the whole RunPodSandbox call with the cni stage inside it (containerd 1.6
// passes no pod UID: the pod is found by name); on the simulated runtime,
// which starts the pause container before its network, sandbox ends where
// cni begins.
func TestSandboxAndNetworkFollowTheRuntimesOrder(t *testing.T) {
	const pause = 30 * time.Millisecond
	for _, tc := range []struct {
		name    string
		runtime func(t *testing.T) (internalapi.RuntimeService, *events)
		// inside: cni lies within sandbox, which ends at least pause after cni
		inside bool
	}{
		{"containerd", func(t *testing.T) (internalapi.RuntimeService, *events) {
			out := &events{}
			h := New(trace.New(clock.RealClock{}, out), "node-1")
			rt, _ := h.Interpose(&containerdLike{obs: h, pause: pause}, nil)
			return rt, out
		}, true},
		{"simulated", func(t *testing.T) (internalapi.RuntimeService, *events) {
			s, _, out := node(t)
			return s.rt, out
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, out := tc.runtime(t)
			if _, err := rt.RunPodSandbox(context.Background(), sandboxConfig("web"), ""); err != nil {
				t.Fatal(err)
			}
			at := map[stages.ID]map[stages.Status]time.Time{stages.Sandbox: {}, stages.CNI: {}}
			out.mu.Lock()
			for _, e := range out.evs {
				if m := at[e.Stage]; m != nil && e.Pod == "web" {
					m[e.Status] = e.Time
				}
			}
			out.mu.Unlock()
			sb, cni := at[stages.Sandbox], at[stages.CNI]
			if sb[stages.Succeeded].IsZero() || cni[stages.Succeeded].IsZero() {
				t.Fatalf("sandbox %v, cni %v: want both to succeed", sb, cni)
			}
			inside := !cni[stages.Started].Before(sb[stages.Started]) && sb[stages.Succeeded].Sub(cni[stages.Succeeded]) >= pause
			before := !sb[stages.Succeeded].After(cni[stages.Started])
			if tc.inside && !inside || !tc.inside && !before {
				t.Errorf("sandbox %s..%s, cni %s..%s: want cni inside sandbox %v", sb[stages.Started].Format(time.StampMicro),
					sb[stages.Succeeded].Format(time.StampMicro), cni[stages.Started].Format(time.StampMicro),
					cni[stages.Succeeded].Format(time.StampMicro), tc.inside)
			}
		})
	}
}

// A cni fault fails the ADD with the plugin's words: named by the plugin
// for a runtime that reports what its plugins say (the simulated one),
// bare for a delegating plugin whose runtime names it itself (podtrace-cni
// under containerd). Either way the stage reads as the kubelet's
// FailedCreatePodSandBox does, and the ADD never runs.
func TestNetworkFaultWording(t *testing.T) {
	const full = `plugin type="bridge" name="podtrace" failed (add): failed to allocate for range 0: no IP addresses available in range set: 10.244.1.1-10.244.1.254`
	for _, tc := range []struct {
		name       string
		n          cri.Network
		want, span string
	}{
		{"reporting", cri.Network{Plugin: "bridge", Name: "podtrace", PauseFirst: true}, full,
			`failed to setup network for sandbox "sb1": ` + full},
		{"delegating", cri.Network{Plugin: "podtrace-cni", Delegating: true},
			"failed to allocate for range 0: no IP addresses available in range set: 10.244.1.1-10.244.1.254",
			`failed to setup network for sandbox "sb1": plugin type="podtrace-cni" failed (add): failed to allocate for range 0: no IP addresses available in range set: 10.244.1.1-10.244.1.254`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := &events{}
			tr := trace.New(clock.RealClock{}, out)
			tr.Faults.Add(stages.Fault{Stage: stages.CNI, Kind: stages.Fail})
			h := New(tr, "node-1")
			tc.n.Pod = &runtimeapi.PodSandboxMetadata{Namespace: "default", Name: "web", Uid: "uid-web"}
			tc.n.SandboxID, tc.n.RangeSet = "sb1", "10.244.1.1-10.244.1.254"
			ran := false
			_, err := h.NetworkAdd(context.Background(), tc.n, func() (string, error) { ran = true; return "10.244.1.2/24", nil })
			if err == nil || err.Error() != tc.want || ran {
				t.Fatalf("NetworkAdd: %v (ADD ran: %v), want %q without the ADD", err, ran, tc.want)
			}
			if _, last := out.ended("web"); last[stages.CNI].Status != stages.Retrying || last[stages.CNI].Message != tc.span {
				t.Errorf("cni ended %+v, want Retrying with %q", last[stages.CNI], tc.span)
			}
		})
	}
}
