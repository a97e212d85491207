// Package dynamicresources is the part of kube-scheduler's DynamicResources
// plugin (DRA, on by default since 1.34) that a podtrace cluster can show:
// podtrace serves no ResourceClaims, so PreFilter always skips and the
// plugin's one visible effect is its PostFilter, which runs before
// preemption and adds its reason to every FailedScheduling message.
package dynamicresources

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/engine/scheduler/framework"
	"github.com/podtrace/podtrace/engine/scheduler/plugins/names"
)

// ErrReasonNoClaims is upstream's PostFilter reason for a pod without claims.
const ErrReasonNoClaims = "no new claims to deallocate"

// Plugin is the DynamicResources post-filter.
type Plugin struct{}

var _ framework.PostFilterPlugin = Plugin{}

// New returns the plugin.
func New(framework.Handle) (framework.Plugin, error) { return Plugin{}, nil }

// Name returns "DynamicResources".
func (Plugin) Name() string { return names.DynamicResources }

// PostFilter has no claims to deallocate: the pod is unschedulable as far as
// this plugin can help, and the next post-filter (preemption) runs.
func (Plugin) PostFilter(context.Context, *framework.CycleState, *v1.Pod, *framework.Diagnosis) *framework.Status {
	return framework.NewStatus(framework.Unschedulable, ErrReasonNoClaims)
}
