// Package nodename rejects every node but the one a pod names in spec.nodeName.
package nodename

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/engine/scheduler/framework"
	"github.com/podtrace/podtrace/engine/scheduler/plugins/names"
)

// ErrReason is upstream's reason, word for word.
const ErrReason = "node(s) didn't match the requested node name"

// Plugin is the NodeName filter.
type Plugin struct{}

var _ framework.FilterPlugin = Plugin{}

// New returns the plugin.
func New(framework.Handle) (framework.Plugin, error) { return Plugin{}, nil }

// Name returns "NodeName".
func (Plugin) Name() string { return names.NodeName }

// Filter rejects the node unless the pod names no node or names this one.
func (Plugin) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	if pod.Spec.NodeName == "" || pod.Spec.NodeName == ni.Node().Name {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReason)
}
