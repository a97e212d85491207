package nodeset

import (
	"context"
	"path/filepath"
	"time"

	oteltrace "go.opentelemetry.io/otel/trace"
	"k8s.io/apimachinery/pkg/util/wait"
	internalapi "k8s.io/cri-api/pkg/apis"

	crisim "github.com/podtrace/podtrace/engine/cri/sim"
	crihooks "github.com/podtrace/podtrace/engine/hooks/cri"
	"github.com/podtrace/podtrace/engine/node"
)

// nodeRuntime is one node's container runtime as its kubelet sees it over CRI
// (behind the interposer, when there is one).
type nodeRuntime struct {
	runtime internalapi.RuntimeService
	images  internalapi.ImageManagerService
	hooks   *crihooks.Hooks // nil without a Tracer
	// tracerProvider is the kubelet's, shared with containerd's CRI client
	// (nil: the kubelet makes its own from Config.Tracing).
	tracerProvider oteltrace.TracerProvider
}

// newRuntime builds node i's runtime, on containerd or simulated, behind a
// new interposer when the set has a Tracer.
func (s *Set) newRuntime(ctx context.Context, i int) (nodeRuntime, error) {
	var rt nodeRuntime
	var err error
	if s.cfg.Containerd != nil {
		rt, err = s.containerd(ctx, i)
	} else {
		rt, err = s.sim(ctx, i)
	}
	if err != nil {
		return nodeRuntime{}, err
	}
	if rt.hooks == nil && s.cfg.Tracer != nil {
		rt.hooks = crihooks.New(s.cfg.Tracer, s.cfg.Nodes[i].Name, rt.runtime, rt.images)
	}
	if h := rt.hooks; h != nil {
		if s.cfg.ReportReady {
			h.ReportReady()
		}
		rt.runtime, rt.images = h.Runtime(), h.Images()
		s.mu.Lock()
		s.byName[h.NodeName()] = h
		s.mu.Unlock()
	}
	return rt, nil
}

// containerd starts node i's containerd (its CRI plugin), whose CRI client
// shares the kubelet's tracer provider.
func (s *Set) containerd(ctx context.Context, i int) (nodeRuntime, error) {
	n := s.cfg.Nodes[i]
	tp, err := node.TracerProvider(ctx, n.Name, s.cfg.Tracing)
	if err != nil {
		return nodeRuntime{}, errNode(n, err)
	}
	var routes []string
	if s.cfg.Routes != nil {
		routes = s.cfg.Routes(i)
	}
	cn, err := s.cfg.Containerd.StartNode(ctx, n.Name, n.PodCIDR, tp, routes...)
	if err != nil {
		return nodeRuntime{}, err
	}
	return nodeRuntime{runtime: cn.Runtime, images: cn.Images, tracerProvider: tp}, nil
}

// sim builds node i's simulated runtime; with a Tracer, the interposer is
// woven into it (crihooks.NewSim: its network, ports and health).
func (s *Set) sim(ctx context.Context, i int) (nodeRuntime, error) {
	n := s.cfg.Nodes[i]
	dir := filepath.Join(s.cfg.DataDir, "runtime")
	cfg := crisim.Config{Node: n.Name, PodCIDR: n.PodCIDR, Seed: s.cfg.Seed + int64(i), Speed: s.cfg.Speed,
		Dir: filepath.Join(dir, n.Name)}
	if s.cfg.KeepState {
		cfg.StateFile = filepath.Join(dir, n.Name+".json")
	}
	// The runtime's own CRI spans, as containerd 2.x sends them (none
	// without a tracing block).
	if s.cfg.Tracing != nil {
		var err error
		if cfg.TracerProvider, err = node.NewTracerProvider(ctx, crisim.ServiceName, n.Name, s.cfg.Tracing); err != nil {
			return nodeRuntime{}, errNode(n, err)
		}
	}
	var h *crihooks.Hooks
	var sim *crisim.Runtime
	var err error
	if s.cfg.Tracer == nil {
		sim, err = crisim.New(cfg)
	} else {
		h, sim, err = crihooks.NewSim(s.cfg.Tracer, cfg)
	}
	if err != nil {
		return nodeRuntime{}, errNode(n, err)
	}
	s.sims = append(s.sims, sim)
	if s.cfg.KeepState {
		go wait.UntilWithContext(ctx, func(ctx context.Context) { _ = sim.Save(ctx) }, 2*time.Second)
	}
	return nodeRuntime{runtime: sim, images: sim, hooks: h}, nil
}
