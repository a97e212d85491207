package cri

import (
	"context"
	"testing"
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/podtrace/podtrace/engine/cri/containerd/cniwire"
	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

// containerdLike runs a sandbox as containerd does: the network first
// (podtrace-cni's ADD, reported through PluginAdd), then the pause
// container, which takes pause.
type containerdLike struct {
	internalapi.RuntimeService
	h     *Hooks
	pause time.Duration
}

func (c *containerdLike) RunPodSandbox(ctx context.Context, cfg *runtimeapi.PodSandboxConfig, _ string) (string, error) {
	md := cfg.GetMetadata()
	err := c.h.PluginAdd(ctx, cniwire.Request{Command: "ADD", Namespace: md.GetNamespace(), Name: md.GetName(), Sandbox: "sb1", IfName: "eth0"},
		"10.244.1.1-10.244.1.254", func() cniwire.Report { return cniwire.Report{IP: "10.244.1.2/24"} })
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
		name  string
		hooks func(t *testing.T) (*Hooks, *events)
		// inside: cni lies within sandbox, which ends at least pause after cni
		inside bool
	}{
		{"containerd", func(t *testing.T) (*Hooks, *events) {
			out := &events{}
			c := &containerdLike{pause: pause}
			c.h = New(trace.New(clock.RealClock{}, out), "node-1", c, nil)
			return c.h, out
		}, true},
		{"simulated", func(t *testing.T) (*Hooks, *events) {
			h, _, out := node(t)
			return h, out
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, out := tc.hooks(t)
			if _, err := h.Runtime().RunPodSandbox(context.Background(), sandboxConfig("web"), ""); err != nil {
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
