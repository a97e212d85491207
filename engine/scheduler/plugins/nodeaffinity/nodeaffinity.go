// Package nodeaffinity rejects nodes that do not match the pod's nodeSelector
// or required node affinity, and scores nodes by its preferred node affinity.
package nodeaffinity

import (
	"context"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/podtrace/podtrace/engine/scheduler/framework"
	"github.com/podtrace/podtrace/engine/scheduler/plugins/names"
)

// ErrReasonPod is upstream's reason, word for word.
const ErrReasonPod = "node(s) didn't match Pod's node affinity/selector"

// Plugin is the NodeAffinity pre-filter, filter and scorer.
type Plugin struct{}

var (
	_ framework.PreFilterPlugin = Plugin{}
	_ framework.FilterPlugin    = Plugin{}
	_ framework.PreScorePlugin  = Plugin{}
	_ framework.ScorePlugin     = Plugin{}
	_ framework.ScoreNormalizer = Plugin{}
)

// New returns the plugin.
func New(framework.Handle) (framework.Plugin, error) { return Plugin{}, nil }

// Name returns "NodeAffinity".
func (Plugin) Name() string { return names.NodeAffinity }

func required(pod *v1.Pod) *v1.NodeSelector {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil {
		return nil
	}
	return a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
}

// ErrReasonConflict is upstream's PreFilter reason when every term names
// nodes by metadata.name and no node satisfies them all.
const ErrReasonConflict = "pod affinity terms conflict"

// PreFilter skips pods with neither a nodeSelector nor required node
// affinity. When every required term picks nodes by metadata.name (as
// DaemonSet pods do), only those nodes are worth filtering.
func (Plugin) PreFilter(_ context.Context, _ *framework.CycleState, pod *v1.Pod) (*framework.PreFilterResult, *framework.Status) {
	req := required(pod)
	if req == nil && pod.Spec.NodeSelector == nil {
		return nil, framework.NewStatus(framework.Skip)
	}
	if req == nil || len(req.NodeSelectorTerms) == 0 {
		return nil, nil
	}
	var names map[string]bool
	for _, t := range req.NodeSelectorTerms {
		var termNames map[string]bool
		for _, r := range t.MatchFields {
			if r.Key != "metadata.name" || r.Operator != v1.NodeSelectorOpIn {
				continue
			}
			s := map[string]bool{}
			for _, v := range r.Values {
				if termNames == nil || termNames[v] {
					s[v] = true
				}
			}
			termNames = s // ANDed requirements: intersection
		}
		if termNames == nil {
			return nil, nil // this term allows any node, and terms are ORed
		}
		if names == nil {
			names = map[string]bool{}
		}
		for n := range termNames {
			names[n] = true
		}
	}
	if len(names) == 0 {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonConflict)
	}
	return &framework.PreFilterResult{NodeNames: names}, nil
}

// Filter rejects the node unless it matches the nodeSelector and (when set)
// at least one required node selector term.
func (Plugin) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	if Matches(pod, ni.Node()) {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonPod)
}

// Matches reports whether node satisfies the pod's nodeSelector and required node affinity.
func Matches(pod *v1.Pod, node *v1.Node) bool {
	if len(pod.Spec.NodeSelector) > 0 && !labels.SelectorFromSet(pod.Spec.NodeSelector).Matches(labels.Set(node.Labels)) {
		return false
	}
	req := required(pod)
	if req == nil {
		return true
	}
	for _, term := range req.NodeSelectorTerms {
		if termMatches(&term, node) {
			return true
		}
	}
	return false
}

// termMatches ANDs a term's expressions and fields; an empty term matches nothing.
func termMatches(term *v1.NodeSelectorTerm, node *v1.Node) bool {
	if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
		return false
	}
	for _, r := range term.MatchExpressions {
		if !requirementMatches(r, node.Labels) {
			return false
		}
	}
	for _, r := range term.MatchFields {
		if r.Key != "metadata.name" || !requirementMatches(r, map[string]string{"metadata.name": node.Name}) {
			return false
		}
	}
	return true
}

func requirementMatches(r v1.NodeSelectorRequirement, set map[string]string) bool {
	v, has := set[r.Key]
	switch r.Operator {
	case v1.NodeSelectorOpIn, v1.NodeSelectorOpNotIn:
		in := false
		for _, x := range r.Values {
			if has && x == v {
				in = true
			}
		}
		if r.Operator == v1.NodeSelectorOpIn {
			return in
		}
		return !in
	case v1.NodeSelectorOpExists:
		return has
	case v1.NodeSelectorOpDoesNotExist:
		return !has
	case v1.NodeSelectorOpGt, v1.NodeSelectorOpLt:
		if !has || len(r.Values) != 1 {
			return false
		}
		lv, err1 := strconv.ParseInt(v, 10, 64)
		rv, err2 := strconv.ParseInt(r.Values[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if r.Operator == v1.NodeSelectorOpGt {
			return lv > rv
		}
		return lv < rv
	}
	return false
}

func preferred(pod *v1.Pod) []v1.PreferredSchedulingTerm {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil {
		return nil
	}
	return a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution
}

// PreScore skips pods without preferred node affinity.
func (Plugin) PreScore(_ context.Context, _ *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	if len(preferred(pod)) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	return nil
}

// Score sums the weights of the preferred terms the node matches.
func (Plugin) Score(_ context.Context, _ *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	var sum int64
	for _, t := range preferred(pod) {
		if t.Weight != 0 && termMatches(&t.Preference, ni.Node()) {
			sum += int64(t.Weight)
		}
	}
	return sum, nil
}

// NormalizeScore scales the sums to 0–100.
func (Plugin) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod, scores []framework.NodeScore) *framework.Status {
	return framework.DefaultNormalizeScore(framework.MaxNodeScore, false, scores)
}
