package sim

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podtrace/podtrace/engine/cri"
)

// saveEvery is how often NewNode's runtime saves its records to its
// StateFile.
const saveEvery = 2 * time.Second

var _ cri.Factory = NewNode

// NewNode is the simulated runtime's cri.Factory: one node's runtime, as
// cfg says. Its Observer (the node's CRI seam) runs each sandbox's CNI ADD,
// after the pause container (PauseFirst), names the ports of the pods'
// probes and hooks, and says which pods stop answering (Recheck asks it
// again). With a StateFile it saves its records every 2 s until ctx ends,
// and at Close.
func NewNode(ctx context.Context, cfg cri.Config) (cri.Node, error) {
	c := Config{Node: cfg.Name, PodCIDR: cfg.PodCIDR, Seed: cfg.Seed, Speed: cfg.Speed, Dir: cfg.Dir, HostDir: cfg.HostDir, StateFile: cfg.StateFile,
		Mounts: cfg.Mounts}
	// The runtime's own CRI spans, as containerd 2.x sends them (none
	// without a tracing block).
	if cfg.NewTracerProvider != nil {
		var err error
		if c.TracerProvider, err = cfg.NewTracerProvider(ServiceName); err != nil {
			return cri.Node{}, fmt.Errorf("node %s: %w", cfg.Name, err)
		}
	}
	var r *Runtime
	if obs := cfg.Observer; obs != nil {
		c.Network = func(ctx context.Context, md *runtimeapi.PodSandboxMetadata, id string, add func() (string, error)) (string, error) {
			return obs.NetworkAdd(ctx, cri.Network{Pod: md, SandboxID: id, RangeSet: r.RangeSet(), Plugin: "bridge", Name: "podtrace", PauseFirst: true}, add)
		}
		c.ExtraPorts, c.Unhealthy = obs.ExtraPorts, obs.Unhealthy
	}
	r, err := New(c)
	if err != nil {
		return cri.Node{}, fmt.Errorf("node %s: %w", cfg.Name, err)
	}
	if cfg.StateFile != "" {
		go wait.UntilWithContext(ctx, func(ctx context.Context) { _ = r.Save(ctx) }, saveEvery)
	}
	return cri.Node{Runtime: r, Images: r, Recheck: r.Recheck, Close: r.Shutdown}, nil
}
