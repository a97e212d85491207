// Package balancedallocation scores nodes by how evenly cpu and memory would
// be used after placing the pod (NodeResourcesBalancedAllocation).
package balancedallocation

import (
	"context"
	"math"

	v1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/engine/scheduler/framework"
	"github.com/podtrace/podtrace/engine/scheduler/plugins/names"
)

const stateKey framework.StateKey = "PreScore" + names.NodeResourcesBalancedAllocation

// Plugin is the NodeResourcesBalancedAllocation scorer.
type Plugin struct{}

var (
	_ framework.PreScorePlugin = Plugin{}
	_ framework.ScorePlugin    = Plugin{}
)

// New returns the plugin.
func New(framework.Handle) (framework.Plugin, error) { return Plugin{}, nil }

// Name returns "NodeResourcesBalancedAllocation".
func (Plugin) Name() string { return names.NodeResourcesBalancedAllocation }

// PreScore skips best-effort pods (no cpu or memory requests), as upstream does.
func (Plugin) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	req := framework.PodRequests(pod, false)
	if req.MilliCPU == 0 && req.Memory == 0 {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(stateKey, req)
	return nil
}

// Score rewards nodes whose cpu and memory fractions end closer together,
// relative to before the pod: 50 + (50 + with − without)/2.
func (Plugin) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	v, err := state.Read(stateKey)
	req, _ := v.(*framework.Resource)
	if err != nil {
		req = framework.PodRequests(pod, false)
	}
	alloc := [2]int64{ni.Allocatable.MilliCPU, ni.Allocatable.Memory}
	before := [2]int64{ni.Requested.MilliCPU, ni.Requested.Memory}
	after := [2]int64{before[0] + req.MilliCPU, before[1] + req.Memory}
	with, without := balance(after[:], alloc[:]), balance(before[:], alloc[:])
	return framework.MaxNodeScore/2 + (framework.MaxNodeScore/2+with-without)/2, nil
}

// balance returns (1 − std of the used fractions) × 100, over the resources
// the node has (cpu and memory here: std is half their difference).
func balance(requested, allocatable []int64) int64 {
	var fractions [2]float64
	n := 0
	for i := range requested {
		if allocatable[i] == 0 {
			continue
		}
		fractions[n] = math.Min(float64(requested[i])/float64(allocatable[i]), 1)
		n++
	}
	std := 0.0
	if n == 2 {
		std = math.Abs((fractions[0] - fractions[1]) / 2)
	}
	return int64((1 - std) * float64(framework.MaxNodeScore))
}
