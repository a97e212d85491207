// Package nodeports rejects nodes where a host port the pod asks for is taken.
package nodeports

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/engine/scheduler/framework"
	"github.com/podtrace/podtrace/engine/scheduler/plugins/names"
)

// ErrReason is upstream's reason, word for word.
const ErrReason = "node(s) didn't have free ports for the requested pod ports"

const stateKey framework.StateKey = "PreFilter" + names.NodePorts

// Plugin is the NodePorts pre-filter and filter.
type Plugin struct{}

var (
	_ framework.PreFilterPlugin = Plugin{}
	_ framework.FilterPlugin    = Plugin{}
)

// New returns the plugin.
func New(framework.Handle) (framework.Plugin, error) { return Plugin{}, nil }

// Name returns "NodePorts".
func (Plugin) Name() string { return names.NodePorts }

// PreFilter collects the pod's host ports; it skips pods without any.
func (Plugin) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod) (*framework.PreFilterResult, *framework.Status) {
	ports := framework.PodHostPorts(pod)
	if len(ports) == 0 {
		return nil, framework.NewStatus(framework.Skip)
	}
	state.Write(stateKey, ports)
	return nil, nil
}

// Filter rejects the node if any wanted port conflicts with one in use.
func (Plugin) Filter(_ context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	v, err := state.Read(stateKey)
	wanted, _ := v.([]framework.HostPort)
	if err != nil {
		wanted = framework.PodHostPorts(pod)
	}
	for _, w := range wanted {
		for _, u := range ni.UsedPorts {
			if Conflict(w, u) {
				return framework.NewStatus(framework.Unschedulable, ErrReason)
			}
		}
	}
	return nil
}

// Conflict reports whether two host ports collide: same protocol and port,
// and the same IP or either one the wildcard 0.0.0.0.
func Conflict(a, b framework.HostPort) bool {
	if a.Port != b.Port || a.Protocol != b.Protocol {
		return false
	}
	return a.IP == b.IP || a.IP == "0.0.0.0" || b.IP == "0.0.0.0"
}
