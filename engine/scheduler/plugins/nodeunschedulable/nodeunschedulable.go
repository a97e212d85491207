// Package nodeunschedulable rejects nodes marked spec.unschedulable (cordoned)
// unless the pod tolerates the node.kubernetes.io/unschedulable taint.
package nodeunschedulable

import (
	"context"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/engine/scheduler/framework"
	"github.com/podtrace/podtrace/engine/scheduler/plugins/names"
)

// ErrReasonUnschedulable is the reason for a cordoned node, word for word upstream's.
const ErrReasonUnschedulable = "node(s) were unschedulable"

// Plugin is the NodeUnschedulable filter.
type Plugin struct{}

var _ framework.FilterPlugin = Plugin{}

// New returns the plugin.
func New(framework.Handle) (framework.Plugin, error) { return Plugin{}, nil }

// Name returns "NodeUnschedulable".
func (Plugin) Name() string { return names.NodeUnschedulable }

// Filter rejects an unschedulable node the pod does not tolerate.
func (Plugin) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	if !ni.Node().Spec.Unschedulable {
		return nil
	}
	taint := &v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}
	for i := range pod.Spec.Tolerations {
		if pod.Spec.Tolerations[i].ToleratesTaint(logr.Discard(), taint, false) {
			return nil
		}
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonUnschedulable)
}
