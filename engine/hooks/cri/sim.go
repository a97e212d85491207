package cri

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	crisim "github.com/podtrace/podtrace/engine/cri/sim"
	"github.com/podtrace/podtrace/engine/trace"
)

// NewSim returns a node's simulated CRI runtime (engine/cri/sim, as cfg
// says) behind a new interposer reporting to tr: the runtime's CNI ADD is
// the cni stage, after the sandbox stage (the simulated runtime starts the
// pause container first), it answers on the ports of the pod's probes and
// hooks, and a ready fault makes a pod stop answering.
func NewSim(tr *trace.Tracer, cfg crisim.Config) (*Hooks, *crisim.Runtime, error) {
	var h *Hooks
	var sim *crisim.Runtime
	cfg.Network = func(ctx context.Context, md *runtimeapi.PodSandboxMetadata, id string, add func() (string, error)) (string, error) {
		h.sandboxUp(md.GetUid(), id) // the simulated runtime's pause container runs before its network
		return h.Network(sim.RangeSet(), "bridge", "podtrace", crisim.NetworkSetupError)(ctx, md, id, add)
	}
	cfg.ExtraPorts = func(md *runtimeapi.PodSandboxMetadata) []int32 { return h.ExtraPorts(md) }
	cfg.Unhealthy = func(md *runtimeapi.PodSandboxMetadata) bool { return h.Unhealthy(md) }
	sim, err := crisim.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	h = New(tr, cfg.Node, sim, sim)
	return h, sim, nil
}

// RecheckOnFaults makes the simulated pods of sims stop or resume answering
// on their addresses as tr's ready faults come and go, until ctx ends.
func RecheckOnFaults(ctx context.Context, tr *trace.Tracer, sims []*crisim.Runtime) {
	for {
		changed := tr.Faults.Changed()
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
		for _, s := range sims {
			s.Recheck()
		}
	}
}
