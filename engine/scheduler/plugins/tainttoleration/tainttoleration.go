// Package tainttoleration rejects nodes with NoSchedule/NoExecute taints the
// pod does not tolerate, and prefers nodes with fewer untolerated
// PreferNoSchedule taints.
package tainttoleration

import (
	"context"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/engine/scheduler/framework"
	"github.com/podtrace/podtrace/engine/scheduler/plugins/names"
)

// ErrReasonUntolerated is kube-scheduler 1.36's filter reason, word for word.
const ErrReasonUntolerated = "node(s) had untolerated taint(s)"

// Plugin is the TaintToleration filter and scorer.
type Plugin struct{}

var (
	_ framework.FilterPlugin    = Plugin{}
	_ framework.ScorePlugin     = Plugin{}
	_ framework.ScoreNormalizer = Plugin{}
)

// New returns the plugin.
func New(framework.Handle) (framework.Plugin, error) { return Plugin{}, nil }

// Name returns "TaintToleration".
func (Plugin) Name() string { return names.TaintToleration }

// Filter rejects the node if it has a NoSchedule or NoExecute taint the pod does not tolerate.
func (Plugin) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	for i := range ni.Node().Spec.Taints {
		t := &ni.Node().Spec.Taints[i]
		if t.Effect != v1.TaintEffectNoSchedule && t.Effect != v1.TaintEffectNoExecute {
			continue
		}
		if !tolerates(pod.Spec.Tolerations, t) {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonUntolerated)
		}
	}
	return nil
}

// Score counts the node's PreferNoSchedule taints the pod does not tolerate.
func (Plugin) Score(_ context.Context, _ *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	var prefer []v1.Toleration
	for _, t := range pod.Spec.Tolerations {
		if t.Effect == "" || t.Effect == v1.TaintEffectPreferNoSchedule {
			prefer = append(prefer, t)
		}
	}
	var n int64
	for i := range ni.Node().Spec.Taints {
		t := &ni.Node().Spec.Taints[i]
		if t.Effect == v1.TaintEffectPreferNoSchedule && !tolerates(prefer, t) {
			n++
		}
	}
	return n, nil
}

// NormalizeScore reverses the counts: fewer untolerated taints score higher.
func (Plugin) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod, scores []framework.NodeScore) *framework.Status {
	return framework.DefaultNormalizeScore(framework.MaxNodeScore, true, scores)
}

func tolerates(tolerations []v1.Toleration, taint *v1.Taint) bool {
	for i := range tolerations {
		if tolerations[i].ToleratesTaint(logr.Discard(), taint, false) {
			return true
		}
	}
	return false
}
