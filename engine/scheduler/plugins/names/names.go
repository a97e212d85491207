// Package names holds the names of the in-tree plugins, as kube-scheduler spells them.
package names

// The plugin names.
const (
	NodeUnschedulable               = "NodeUnschedulable"
	NodeName                        = "NodeName"
	TaintToleration                 = "TaintToleration"
	NodeAffinity                    = "NodeAffinity"
	NodePorts                       = "NodePorts"
	NodeResourcesFit                = "NodeResourcesFit"
	NodeResourcesBalancedAllocation = "NodeResourcesBalancedAllocation"
	DefaultPreemption               = "DefaultPreemption"
	DynamicResources                = "DynamicResources"
)
