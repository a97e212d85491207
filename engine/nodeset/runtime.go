package nodeset

import (
	"context"
	"path/filepath"

	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/podtrace/podtrace/engine/cri"
	"github.com/podtrace/podtrace/engine/cri/runtimes"
	crihooks "github.com/podtrace/podtrace/engine/hooks/cri"
	"github.com/podtrace/podtrace/engine/node"
)

// nodeRuntime is one node's container runtime as its kubelet sees it over
// CRI (behind the interposer, when there is one).
type nodeRuntime struct {
	cri.Node
	hooks *crihooks.Hooks // nil without a Tracer
	// tracerProvider is the kubelet's, which the runtime's CRI client may
	// share.
	tracerProvider oteltrace.TracerProvider
	// mounts records what the kubelet mounts, for a runtime whose kubelet
	// does not really mount (cri.Config.Mounts).
	mounts *node.Mounts
}

// factory is what starts the set's runtimes: Config.Runtime, else the
// simulated runtime.
func (s *Set) factory() cri.Factory {
	if s.cfg.Runtime != nil {
		return s.cfg.Runtime
	}
	return runtimes.Simulated().NewNode
}

// newRuntime starts node i's runtime through the set's factory, behind a
// new interposer, its observer, when the set has a Tracer.
func (s *Set) newRuntime(ctx context.Context, i int) (nodeRuntime, error) {
	n := s.cfg.Nodes[i]
	tp, err := node.TracerProvider(ctx, n.Name, s.cfg.Tracing)
	if err != nil {
		return nodeRuntime{}, errNode(n, err)
	}
	dir := filepath.Join(s.cfg.DataDir, "runtime")
	mounts := node.NewMounts()
	cfg := cri.Config{Name: n.Name, PodCIDR: n.PodCIDR, Seed: s.cfg.Seed + int64(i), Speed: s.cfg.Speed,
		Dir: filepath.Join(dir, n.Name), HostDir: s.hostDir(n.Name), KubeletTracerProvider: tp, Mounts: mounts.Type}
	if s.cfg.KeepState {
		cfg.StateFile = filepath.Join(dir, n.Name+".json")
	}
	if s.cfg.Routes != nil {
		cfg.Routes = s.cfg.Routes(i)
	}
	if s.cfg.Tracing != nil {
		cfg.NewTracerProvider = func(service string) (oteltrace.TracerProvider, error) {
			return node.NewTracerProvider(ctx, service, n.Name, s.cfg.Tracing)
		}
	}
	var h *crihooks.Hooks
	if s.cfg.Tracer != nil {
		h = crihooks.New(s.cfg.Tracer, n.Name)
		cfg.Observer = h
	}
	rn, err := s.factory()(ctx, cfg)
	if err != nil {
		return nodeRuntime{}, err
	}
	rt := nodeRuntime{Node: rn, hooks: h, tracerProvider: tp, mounts: mounts}
	if h != nil {
		if s.cfg.ReportReady {
			h.ReportReady()
		}
		rt.Runtime, rt.Images = h.Interpose(rn.Runtime, rn.Images)
	}
	return rt, nil
}
