package scheduler

import (
	"github.com/podtrace/podtrace/engine/scheduler/framework"
	"github.com/podtrace/podtrace/engine/scheduler/plugins/balancedallocation"
	"github.com/podtrace/podtrace/engine/scheduler/plugins/defaultpreemption"
	"github.com/podtrace/podtrace/engine/scheduler/plugins/dynamicresources"
	"github.com/podtrace/podtrace/engine/scheduler/plugins/names"
	"github.com/podtrace/podtrace/engine/scheduler/plugins/nodeaffinity"
	"github.com/podtrace/podtrace/engine/scheduler/plugins/nodename"
	"github.com/podtrace/podtrace/engine/scheduler/plugins/nodeports"
	"github.com/podtrace/podtrace/engine/scheduler/plugins/noderesourcesfit"
	"github.com/podtrace/podtrace/engine/scheduler/plugins/nodeunschedulable"
	"github.com/podtrace/podtrace/engine/scheduler/plugins/tainttoleration"
)

// DefaultRegistry returns the in-tree plugins by name.
func DefaultRegistry() framework.Registry {
	return framework.Registry{
		names.NodeUnschedulable:               nodeunschedulable.New,
		names.NodeName:                        nodename.New,
		names.TaintToleration:                 tainttoleration.New,
		names.NodeAffinity:                    nodeaffinity.New,
		names.NodePorts:                       nodeports.New,
		names.NodeResourcesFit:                noderesourcesfit.New,
		names.DefaultPreemption:               defaultpreemption.New,
		names.DynamicResources:                dynamicresources.New,
		names.NodeResourcesBalancedAllocation: balancedallocation.New,
	}
}

// DefaultPlugins is kube-scheduler 1.36's default profile restricted to the
// plugins podtrace has, in upstream's order (filters run in this order and
// stop at the first rejection) and with upstream's score weights.
func DefaultPlugins() []framework.PluginConfig {
	return []framework.PluginConfig{
		{Name: names.NodeUnschedulable},
		{Name: names.NodeName},
		{Name: names.TaintToleration, Weight: 3},
		{Name: names.NodeAffinity, Weight: 2},
		{Name: names.NodePorts},
		{Name: names.NodeResourcesFit, Weight: 1},
		{Name: names.DynamicResources, Weight: 2}, // before DefaultPreemption, as upstream inserts it
		{Name: names.DefaultPreemption},
		{Name: names.NodeResourcesBalancedAllocation, Weight: 1},
	}
}
