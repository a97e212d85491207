// Package nodeset builds and runs a set of podtrace nodes: one real kubelet
// (engine/node) per node, each on the container runtime a cri.Factory
// starts for it (engine/cri; the runtimes are chosen in
// engine/cri/runtimes, the simulated one by default) behind podtrace's
// CRI interposer (engine/hooks/cri), the runtime's observer, and the two watchers
// that keep the nodes in step with the tracer's faults (faults.go). The
// embedded cluster (engine) and the node agents (engine/agent) both run
// their nodes with it.
package nodeset

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/rest"
	tracingapi "k8s.io/component-base/tracing/api/v1"
	"k8s.io/klog/v2"

	"github.com/podtrace/podtrace/engine/cri"
	crihooks "github.com/podtrace/podtrace/engine/hooks/cri"
	"github.com/podtrace/podtrace/engine/node"
	"github.com/podtrace/podtrace/engine/nodes"
	"github.com/podtrace/podtrace/engine/trace"
)

// Config describes a set of nodes.
type Config struct {
	// Nodes to run a kubelet for.
	Nodes []nodes.Spec
	// DataDir holds each node's kubelet root directory (kubelet/NODE), its
	// runtime's files (runtime/NODE, cri.Config.Dir) and, for a simulated
	// node, its host file system (host/NODE, node.Config.HostDir).
	DataDir string
	// Tracer receives the node-side stage events and holds the faults the
	// nodes follow; nil runs every kubelet straight on its runtime, with no
	// interposer: no stage events, faults or breakpoints on the nodes.
	Tracer *trace.Tracer
	// Seed makes the simulated runtimes repeatable (node i gets Seed+i).
	Seed int64
	// Speed, when set, divides the simulated runtimes' latencies.
	Speed func() float64
	// KeepState keeps each simulated runtime's records in
	// DataDir/runtime/NODE.json (saved every 2 s and at Shutdown), so that
	// the next set on the same DataDir finds them, as a node finds its
	// containers after a reboot.
	KeepState bool
	// Runtime, when set, starts each node's container runtime (the NewNode
	// of a cri.Host that engine/cri/runtimes started, which the caller
	// closes after the set); else each node runs on the simulated runtime
	// (runtimes.Simulated).
	Runtime cri.Factory
	// Routes, when set, are the ranges node i's pods route through their
	// gateway, on a runtime with real pod networks (cri.Config.Routes).
	Routes func(i int) []string
	// Credentials gives node i its identity; required.
	Credentials func(i int, n nodes.Spec) (Credentials, error)
	// ReportReady makes the interposers report the ready stage from the
	// kubelets' pod status writes, where no seam in the API server sees
	// them (a cluster that is not podtrace's).
	ReportReady bool
	// ClusterDNS are the addresses of the cluster's DNS server (the
	// kubelets' clusterDNS); none leaves pods the node's resolvers.
	ClusterDNS []string
	// MaxContainerRestartPeriod caps the kubelets' crash-loop back-off; 0
	// keeps upstream's 5 minutes.
	MaxContainerRestartPeriod time.Duration
	// Tracing, when set, is the kubelets' and runtimes' tracing block:
	// they send their own spans to the OTLP endpoint there.
	Tracing *tracingapi.TracingConfiguration
}

// Credentials are what one node's kubelet presents.
type Credentials struct {
	// KubeConfig reaches the API server as the node.
	KubeConfig *rest.Config
	// ServingCert is the kubelet API's certificate, for the node's addresses.
	ServingCert tls.Certificate
	// ClientCAFile verifies the kubelet API's callers; empty leaves it
	// unauthenticated.
	ClientCAFile string
	// NodeIP, when set, is the node's InternalIP (a local address).
	NodeIP net.IP
}

// Set is a running set of nodes.
type Set struct {
	cfg      Config
	kubelets []*node.Node
	hooks    []*crihooks.Hooks // by node; nil without a Tracer
	runtimes []cri.Node        // by node, as their factory made them
	// cancel ends the context the runtimes and kubelets run in.
	cancel context.CancelFunc
}

// Start builds every node's runtime and interposer, then starts the
// kubelets concurrently and the fault watchers; the kubelets register their
// Nodes in the background and stop when ctx ends, and from then on the
// runtimes refuse new pods. When a node fails to start, Start stops the
// ones that did and undoes their mounts before it returns the error.
func Start(ctx context.Context, cfg Config) (*Set, error) {
	if cfg.Credentials == nil {
		return nil, errors.New("nodeset: Credentials is required")
	}
	s := &Set{cfg: cfg}
	parent := ctx
	ctx, s.cancel = context.WithCancel(ctx)
	abort := func(err error) (*Set, error) {
		s.Stop()
		s.Shutdown(context.WithoutCancel(parent))
		return nil, err
	}
	runtimes := make([]nodeRuntime, len(cfg.Nodes))
	for i := range cfg.Nodes {
		rt, err := s.newRuntime(ctx, i)
		if err != nil {
			return abort(err)
		}
		runtimes[i] = rt
		s.runtimes = append(s.runtimes, rt.Node)
		if rt.hooks != nil {
			s.hooks = append(s.hooks, rt.hooks)
		}
	}
	context.AfterFunc(ctx, s.Stop) // not every loop of a kubelet ends with ctx
	s.kubelets = make([]*node.Node, len(cfg.Nodes))
	var g errgroup.Group
	for i := range cfg.Nodes {
		g.Go(func() (err error) {
			s.kubelets[i], err = s.startKubelet(ctx, i, runtimes[i])
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return abort(err)
	}
	s.watchFaults(ctx)
	return s, nil
}

// hostDir is node name's host file system when it is simulated.
func (s *Set) hostDir(name string) string { return filepath.Join(s.cfg.DataDir, "host", name) }

// startKubelet starts node i's kubelet on rt.
func (s *Set) startKubelet(ctx context.Context, i int, rt nodeRuntime) (*node.Node, error) {
	n := s.cfg.Nodes[i]
	cred, err := s.cfg.Credentials(i, n)
	if err != nil {
		return nil, err
	}
	c := node.Config{Spec: n, Dir: filepath.Join(s.cfg.DataDir, "kubelet", n.Name), HostDir: s.hostDir(n.Name),
		KubeConfig: cred.KubeConfig, Runtime: rt.Runtime, Images: rt.Images, ServingCert: cred.ServingCert, ClientCAFile: cred.ClientCAFile,
		NodeIP: cred.NodeIP, MaxContainerRestartPeriod: s.cfg.MaxContainerRestartPeriod, RealContainers: rt.RealContainers,
		ClusterDNS: s.cfg.ClusterDNS, Tracing: s.cfg.Tracing, TracerProvider: rt.tracerProvider, Mounts: rt.mounts}
	if rt.hooks != nil {
		c.Tracker, c.OnEvent = rt.hooks.Tracker, rt.hooks.OnEvent
	}
	return node.Start(ctx, c)
}

// Nodes returns the running kubelets, in the order of Config.Nodes.
func (s *Set) Nodes() []*node.Node { return s.kubelets }

// Hooks returns the nodes' interposers, in the order of Config.Nodes;
// none without a Tracer.
func (s *Set) Hooks() []*crihooks.Hooks { return s.hooks }

// Len returns how many nodes the set runs.
func (s *Set) Len() int { return len(s.kubelets) }

// Stop makes every node's runtime refuse new sandboxes and containers, so
// that no pod starts once the set stops (Start does it when its ctx ends;
// call it first to stop pods from starting while the rest shuts down).
func (s *Set) Stop() {
	for _, h := range s.hooks {
		h.Stop()
	}
}

// Shutdown stops the runtimes that the set stops (cri.Node.Close: the
// simulated ones, which save their records a last time with KeepState):
// from then on they write nothing under DataDir. Then it unmounts what
// the kubelets of real containers left mounted in their root directories
// (node.Node.Unmount), so that DataDir can be removed and no mount stays
// on the host. It ends the kubelets' context first, if the caller's has
// not ended yet.
func (s *Set) Shutdown(ctx context.Context) {
	if s.cancel != nil {
		s.cancel()
	}
	for _, r := range s.runtimes {
		if r.Close != nil {
			_ = r.Close(ctx)
		}
	}
	for _, k := range s.kubelets {
		if k == nil {
			continue
		}
		if err := k.Unmount(); err != nil {
			klog.ErrorS(err, "Mounts left on the host")
		}
	}
}

// errNode wraps err with the node it happened on.
func errNode(n nodes.Spec, err error) error { return fmt.Errorf("node %s: %w", n.Name, err) }
