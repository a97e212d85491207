// Package noderesourcesfit rejects nodes without room for the pod's requests
// and scores feasible nodes by LeastAllocated (cpu and memory, weight 1 each).
package noderesourcesfit

import (
	"context"
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/engine/scheduler/framework"
	"github.com/podtrace/podtrace/engine/scheduler/plugins/names"
)

const stateKey framework.StateKey = "PreFilter" + names.NodeResourcesFit

// Plugin is the NodeResourcesFit pre-filter, filter and LeastAllocated scorer.
type Plugin struct{}

var (
	_ framework.PreFilterPlugin = Plugin{}
	_ framework.FilterPlugin    = Plugin{}
	_ framework.PreScorePlugin  = Plugin{}
	_ framework.ScorePlugin     = Plugin{}
)

const scoreKey framework.StateKey = "PreScore" + names.NodeResourcesFit

// PreScore computes the pod's scoring requests once per attempt.
func (Plugin) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	state.Write(scoreKey, framework.PodRequests(pod, true))
	return nil
}

// New returns the plugin.
func New(framework.Handle) (framework.Plugin, error) { return Plugin{}, nil }

// Name returns "NodeResourcesFit".
func (Plugin) Name() string { return names.NodeResourcesFit }

// PreFilter computes the pod's requests once per attempt.
func (Plugin) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod) (*framework.PreFilterResult, *framework.Status) {
	state.Write(stateKey, framework.PodRequests(pod, false))
	return nil, nil
}

// InsufficientResource is one resource the node lacks for the pod.
type InsufficientResource struct {
	ResourceName v1.ResourceName
	Reason       string
	Requested    int64
	Used         int64
	Capacity     int64
	// Unresolvable is set when the request exceeds the node's allocatable
	// itself: evicting pods cannot help.
	Unresolvable bool
}

// Filter rejects the node with every resource it lacks ("Too many pods",
// "Insufficient cpu", "Insufficient memory", ...). The status is
// UnschedulableAndUnresolvable when a request exceeds the node's allocatable.
func (Plugin) Filter(_ context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	v, err := state.Read(stateKey)
	req, _ := v.(*framework.Resource)
	if err != nil {
		req = framework.PodRequests(pod, false)
	}
	insufficient := Fits(req, ni)
	if len(insufficient) == 0 {
		return nil
	}
	code := framework.Unschedulable
	reasons := make([]string, 0, len(insufficient))
	for _, r := range insufficient {
		reasons = append(reasons, r.Reason)
		if r.Unresolvable {
			code = framework.UnschedulableAndUnresolvable
		}
	}
	return framework.NewStatus(code, reasons...)
}

// Fits lists what the node lacks for req, in upstream's order: pods, cpu,
// memory, ephemeral-storage, then extended resources.
func Fits(req *framework.Resource, ni *framework.NodeInfo) []InsufficientResource {
	var out []InsufficientResource
	alloc, used := ni.Allocatable, ni.Requested
	if len(ni.Pods)+1 > alloc.AllowedPodNumber {
		out = append(out, InsufficientResource{v1.ResourcePods, "Too many pods", 1, int64(len(ni.Pods)), int64(alloc.AllowedPodNumber), false})
	}
	if req.IsZero() {
		return out
	}
	check := func(name v1.ResourceName, want, a, u int64) {
		if want > 0 && want > a-u {
			out = append(out, InsufficientResource{name, fmt.Sprintf("Insufficient %v", name), want, u, a, want > a})
		}
	}
	check(v1.ResourceCPU, req.MilliCPU, alloc.MilliCPU, used.MilliCPU)
	check(v1.ResourceMemory, req.Memory, alloc.Memory, used.Memory)
	check(v1.ResourceEphemeralStorage, req.EphemeralStorage, alloc.EphemeralStorage, used.EphemeralStorage)
	scalars := make([]string, 0, len(req.Scalar))
	for n := range req.Scalar {
		scalars = append(scalars, string(n))
	}
	sort.Strings(scalars)
	for _, n := range scalars {
		name := v1.ResourceName(n)
		check(name, req.Scalar[name], alloc.Scalar[name], used.Scalar[name])
	}
	return out
}

// Score is LeastAllocated over cpu and memory (weight 1 each), counting
// default requests for containers without any: emptier nodes score higher.
func (Plugin) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	v, err := state.Read(scoreKey)
	req, _ := v.(*framework.Resource)
	if err != nil {
		req = framework.PodRequests(pod, true)
	}
	var score, weights int64
	for _, r := range [][2]int64{
		{ni.NonZeroRequested.MilliCPU + req.MilliCPU, ni.Allocatable.MilliCPU},
		{ni.NonZeroRequested.Memory + req.Memory, ni.Allocatable.Memory},
	} {
		if r[1] == 0 {
			continue
		}
		score += LeastRequestedScore(r[0], r[1])
		weights++
	}
	if weights == 0 {
		return 0, nil
	}
	return score / weights, nil
}

// LeastRequestedScore is (capacity-requested)*100/capacity, 0 when over capacity.
func LeastRequestedScore(requested, capacity int64) int64 {
	if capacity == 0 || requested > capacity {
		return 0
	}
	return (capacity - requested) * framework.MaxNodeScore / capacity
}
