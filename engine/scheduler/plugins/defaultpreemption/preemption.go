// Package defaultpreemption is the PostFilter plugin that runs when no node
// fits: it looks for nodes where evicting lower-priority pods would make room,
// and produces upstream's "preemption: ..." sentence when there are none.
//
// Unlike kube-scheduler it does not evict anything itself: when it finds
// victims it records a Result in the cycle state (ResultKey) and leaves the
// eviction and nomination to the caller.
package defaultpreemption

import (
	"context"
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/engine/scheduler/framework"
	"github.com/podtrace/podtrace/engine/scheduler/plugins/names"
)

// Upstream's reasons, word for word.
const (
	ErrReasonNoVictims  = "No preemption victims found for incoming pod"
	ErrReasonNotHelpful = "Preemption is not helpful for scheduling"
	ErrReasonNever      = "not eligible due to preemptionPolicy=Never."
)

// ResultKey is where a successful PostFilter stores its *Result.
const ResultKey framework.StateKey = "PostFilter" + names.DefaultPreemption

// Result is the node picked for preemption and the pods to evict there.
type Result struct {
	Node    string
	Victims []*v1.Pod
}

// Plugin is the DefaultPreemption post-filter.
type Plugin struct{ h framework.Handle }

var _ framework.PostFilterPlugin = (*Plugin)(nil)

// New returns the plugin; h runs the filters and lists the snapshot's nodes.
func New(h framework.Handle) (framework.Plugin, error) {
	if h == nil {
		return nil, fmt.Errorf("%s needs a framework handle", names.DefaultPreemption)
	}
	return &Plugin{h: h}, nil
}

// Name returns "DefaultPreemption".
func (*Plugin) Name() string { return names.DefaultPreemption }

// Priority returns the pod's priority (0 when unset).
func Priority(p *v1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

// PostFilter dry-runs preemption. It returns Success with a Result in state
// when some node would fit after evicting lower-priority pods, and otherwise
// an Unschedulable status whose message is upstream's "preemption: ..." text.
func (pl *Plugin) PostFilter(ctx context.Context, state *framework.CycleState, pod *v1.Pod, d *framework.Diagnosis) *framework.Status {
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == v1.PreemptNever {
		return framework.NewStatus(framework.Unschedulable, "preemption: "+ErrReasonNever)
	}
	all := pl.h.NodeInfos()
	potential := d.NodesWithCode(all, framework.Unschedulable)
	statuses := map[string]*framework.Status{}
	var best *Result
	var bestPrio int32
	for _, ni := range potential {
		victims, s := pl.selectVictims(ctx, state, pod, ni)
		if !s.IsSuccess() {
			statuses[ni.Node().Name] = s
			continue
		}
		// Fewest-important victims first: lowest highest-priority, then fewest victims.
		hp := Priority(victims[0])
		if best == nil || hp < bestPrio || (hp == bestPrio && len(victims) < len(best.Victims)) {
			best, bestPrio = &Result{Node: ni.Node().Name, Victims: victims}, hp
		}
	}
	if best != nil {
		state.Write(ResultKey, best)
		return nil
	}
	fe := &framework.FitError{Pod: pod, NumAllNodes: len(all), Diagnosis: framework.Diagnosis{
		NodeToStatus:      statuses,
		AbsentNodesStatus: framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonNotHelpful),
	}}
	return framework.NewStatus(framework.Unschedulable, "preemption: "+fe.Error())
}

// selectVictims removes every lower-priority pod from a copy of the node,
// checks the pod fits, then reprieves as many victims as possible (most
// important first). The victims come back most important first.
func (pl *Plugin) selectVictims(ctx context.Context, state *framework.CycleState, pod *v1.Pod, orig *framework.NodeInfo) ([]*v1.Pod, *framework.Status) {
	ni := orig.Clone()
	prio := Priority(pod)
	var potential []*framework.PodInfo
	for _, p := range orig.Pods {
		if Priority(p.Pod) < prio {
			potential = append(potential, p)
			ni.RemovePod(p.Pod)
		}
	}
	if len(potential) == 0 {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonNoVictims)
	}
	if s := pl.h.RunFilterPlugins(ctx, state, pod, ni); !s.IsSuccess() {
		return nil, s
	}
	sort.SliceStable(potential, func(i, j int) bool { return Priority(potential[i].Pod) > Priority(potential[j].Pod) })
	var victims []*v1.Pod
	for _, p := range potential {
		ni.AddPod(p)
		if s := pl.h.RunFilterPlugins(ctx, state, pod, ni); !s.IsSuccess() {
			ni.RemovePod(p.Pod)
			victims = append(victims, p.Pod)
		}
	}
	if len(victims) == 0 {
		return nil, framework.AsStatus(fmt.Errorf("expected at least one victim pod on node %q", orig.Node().Name))
	}
	return victims, nil
}
