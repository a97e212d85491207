package containerd

import (
	"fmt"

	"github.com/podtrace/podtrace/engine/clock"
	"github.com/podtrace/podtrace/engine/kubelet/network"
	"github.com/podtrace/podtrace/engine/kubelet/nodes"
	"github.com/podtrace/podtrace/engine/kubelet/runtime"
)

// Hooks are what engine.Config takes to run nodes on real containers.
type Hooks struct {
	NewRuntime  func(node string, clk *clock.Clock, seed int64) runtime.Runtime
	NewNetwork  func(node string) network.Plugin
	RuntimeName string
}

// Prepare makes every node's runtime and network plugin now (so errors
// surface before the engine starts) and returns the engine hooks that
// hand them out. Container times follow the engine clock.
func (h *Host) Prepare(specs []nodes.Spec) (Hooks, error) {
	rts := map[string]*Runtime{}
	nets := map[string]network.Plugin{}
	for _, s := range specs {
		rt, pl, err := h.Node(s.Name, s.PodCIDR)
		if err != nil {
			return Hooks{}, fmt.Errorf("node %s: %w", s.Name, err)
		}
		rts[s.Name], nets[s.Name] = rt, pl
	}
	return Hooks{
		NewRuntime: func(node string, clk *clock.Clock, _ int64) runtime.Runtime {
			rt := rts[node]
			if clk != nil {
				rt.clock = clk
			}
			return rt
		},
		NewNetwork:  func(node string) network.Plugin { return nets[node] },
		RuntimeName: RuntimeName,
	}, nil
}
