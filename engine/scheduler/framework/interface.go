package framework

import (
	"context"

	v1 "k8s.io/api/core/v1"
)

// MaxNodeScore is the highest score a normalized score plugin gives a node.
const MaxNodeScore int64 = 100

// Plugin is the parent of every extension point interface.
type Plugin interface {
	// Name returns the plugin's name as used in the registry and in verdicts.
	Name() string
}

// PreFilterPlugin runs once per scheduling attempt before any Filter call.
// Returning Skip means the plugin's Filter is not run for this pod; a
// rejecting status makes every node fail with that status. A non-nil result
// restricts the nodes worth filtering (nil means all nodes).
type PreFilterPlugin interface {
	Plugin
	PreFilter(ctx context.Context, state *CycleState, pod *v1.Pod) (*PreFilterResult, *Status)
}

// PreFilterResult names the only nodes a pod can go to; nil means every node.
type PreFilterResult struct {
	NodeNames map[string]bool
}

// AllNodes reports whether the result leaves every node possible.
func (r *PreFilterResult) AllNodes() bool { return r == nil || r.NodeNames == nil }

// Merge intersects two results.
func (r *PreFilterResult) Merge(o *PreFilterResult) *PreFilterResult {
	if r.AllNodes() {
		return o
	}
	if o.AllNodes() {
		return r
	}
	m := map[string]bool{}
	for n := range r.NodeNames {
		if o.NodeNames[n] {
			m[n] = true
		}
	}
	return &PreFilterResult{NodeNames: m}
}

// FilterPlugin decides whether the pod fits on one node. It is called
// concurrently for different nodes and must not modify nodeInfo.
type FilterPlugin interface {
	Plugin
	Filter(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) *Status
}

// PostFilterPlugin runs when no node fits, to make room for the pod later
// (preemption). Its status message ends up in the FitError message.
type PostFilterPlugin interface {
	Plugin
	PostFilter(ctx context.Context, state *CycleState, pod *v1.Pod, diagnosis *Diagnosis) *Status
}

// PreScorePlugin runs once per attempt before scoring, with the feasible
// nodes. Returning Skip means its Score is not run for this pod.
type PreScorePlugin interface {
	Plugin
	PreScore(ctx context.Context, state *CycleState, pod *v1.Pod, nodes []*NodeInfo) *Status
}

// ScorePlugin ranks feasible nodes. Score is called concurrently for
// different nodes.
type ScorePlugin interface {
	Plugin
	Score(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) (int64, *Status)
}

// NodeScore is one node's score from one plugin.
type NodeScore struct {
	Name  string
	Score int64
}

// ScoreNormalizer is implemented by score plugins whose raw scores are not
// already in [0, MaxNodeScore]; it rewrites scores in place.
type ScoreNormalizer interface {
	NormalizeScore(ctx context.Context, state *CycleState, pod *v1.Pod, scores []NodeScore) *Status
}

// Handle is what the framework offers plugins that need more than their
// arguments (preemption runs the filters again on modified nodes).
type Handle interface {
	// RunFilterPlugins runs every filter plugin on nodeInfo and returns the first rejection.
	RunFilterPlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) *Status
	// NodeInfos returns the nodes of the current snapshot.
	NodeInfos() []*NodeInfo
}
