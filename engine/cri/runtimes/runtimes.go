// Package runtimes is where podtrace's container runtimes are chosen:
// one entry per runtime (engine/cri/sim, engine/cri/containerd), each
// starting a cri.Host for every node of the process. It is the only
// package that names a runtime's package; everything else reaches a
// runtime through engine/cri's contract. Adding a runtime is one package
// and one entry in All.
package runtimes

import (
	"context"
	"path/filepath"

	"github.com/podtrace/podtrace/engine/cri"
	crictrd "github.com/podtrace/podtrace/engine/cri/containerd"
	crisim "github.com/podtrace/podtrace/engine/cri/sim"
	"github.com/podtrace/podtrace/images"
)

// Runtime is one container runtime the nodes can run on.
type Runtime struct {
	// Name is how --runtime names it.
	Name string
	// Usage describes it in a few words for --help.
	Usage string
	// Called names it in a sentence ("the simulated runtime").
	Called string
	// Real says it runs real containers: it needs root and Linux, pulls
	// real images (so --registry-mirror and --e2e-images apply), and its
	// pods live on the host's network rather than in podtrace's pod
	// network namespace (engine/podnet).
	Real bool
	// Start starts it for every node of the process; the caller closes
	// what it returns after the nodes.
	Start func(ctx context.Context, o Options) (*cri.Host, error)
}

// Options are what a runtime is started with.
type Options struct {
	// Dir is the process's data directory; a runtime keeps its files
	// below it.
	Dir string
	// Mirror, for a real runtime, is the registry (an http or https URL)
	// every image is pulled from instead of its own.
	Mirror string
	// E2EImages, for a real runtime, builds the conformance suite's
	// images and serves them under their registry.k8s.io names.
	E2EImages bool
}

// All is every runtime, the default (the simulated one) first.
var All = []Runtime{
	{Name: "sim", Usage: "simulated", Called: "the simulated runtime",
		Start: func(context.Context, Options) (*cri.Host, error) { return Simulated(), nil }},
	{Name: "containerd", Usage: "real containers through containerd's CRI plugin; root, Linux", Called: "containerd",
		Real: true, Start: startContainerd},
}

// Lookup returns the runtime named name; "" names the default.
func Lookup(name string) (Runtime, bool) {
	if name == "" {
		return All[0], true
	}
	for _, r := range All {
		if r.Name == name {
			return r, true
		}
	}
	return Runtime{}, false
}

// Simulated is the simulated runtime (engine/cri/sim), the default: it
// starts nothing for the whole process, and its Close does nothing.
func Simulated() *cri.Host {
	return &cri.Host{NewNode: crisim.NewNode, Close: func(context.Context) error { return nil }}
}

// startContainerd starts what real containers need (a loopback registry
// with podtrace's images, the socket podtrace-cni reports on) below
// DIR/containerd; each node then runs a containerd of its own.
func startContainerd(ctx context.Context, o Options) (*cri.Host, error) {
	dir := filepath.Join(o.Dir, "containerd")
	build := filepath.Join(dir, "build")
	h, err := crictrd.StartHost(ctx, crictrd.HostConfig{Dir: dir, BuildCache: build, Mirror: o.Mirror, E2EImages: o.E2EImages})
	if err != nil {
		return nil, err
	}
	if o.E2EImages {
		// The aggregator spec's sample-apiserver and etcd, compiled here
		// rather than in StartHost: e2e/containerd's tests start hosts
		// with E2EImages on a cold build cache and need neither.
		agg, err := images.BuildAggregator(ctx, images.Config{CacheDir: build})
		if err == nil {
			err = images.Push(ctx, h.Registry.Host, agg)
		}
		if err != nil {
			_ = h.Close(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	return h.CRI(), nil
}
