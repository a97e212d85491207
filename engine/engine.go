// Package engine runs podtrace's embedded cluster in one process: etcd and
// the upstream control plane (controlplane: kube-apiserver,
// kube-controller-manager, kube-scheduler, instrumented at their seams) and
// one real kubelet per node on a CRI runtime behind podtrace's interposer
// (engine/nodeset), every component talking to the API server over
// loopback HTTPS with its own identity and reporting stage events to one Hub.
package engine

import (
	"context"
	"math"
	"net"
	"sync/atomic"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/podtrace/podtrace/engine/controlplane"
	"github.com/podtrace/podtrace/engine/cri"
	"github.com/podtrace/podtrace/engine/etcd"
	"github.com/podtrace/podtrace/engine/identity"
	"github.com/podtrace/podtrace/engine/node"
	"github.com/podtrace/podtrace/engine/nodes"
	"github.com/podtrace/podtrace/engine/nodeset"
	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/engine/upstream"
	"github.com/podtrace/podtrace/version"
)

// Config describes the cluster to run.
type Config struct {
	// DataDir keeps the cluster across restarts; empty means temporary.
	DataDir string
	// EtcdEndpoints use an external etcd instead of the embedded one;
	// EtcdTLS is how to reach it (CA, client certificate and key).
	EtcdEndpoints []string
	EtcdTLS       etcd.TLSFiles
	// UnsafeNoFsync turns etcd's fsync off (benchmarks).
	UnsafeNoFsync bool
	// APIListener, when set, is where the API server serves; nil: a free
	// loopback port.
	APIListener net.Listener
	// Nodes to run a kubelet for.
	Nodes []nodes.Spec
	// Speed divides the simulated runtime's latencies (2 = twice as fast;
	// 0 means 1); SetSpeed changes it while the engine runs. The
	// components run on real time.
	Speed float64
	// Seed makes the simulated runtime and the scheduler's tie-breaks repeatable.
	Seed int64
	// MaxContainerRestartPeriod caps the real kubelet's crash-loop back-off
	// (its crashLoopBackOff.maxContainerRestartPeriod); 0 keeps upstream's
	// 5 minutes.
	MaxContainerRestartPeriod time.Duration
	// Runtime, when set, is the container runtime every node's real
	// kubelet runs on (engine/cri/runtimes starts one by name), which the
	// caller closes after the engine; nil: the simulated runtime. One with
	// real containers on the host's bridges (a Gateway: containerd) has the
	// cluster's Services, DNS and API endpoint served there (hostnet.go).
	Runtime *cri.Host
	// PlainControlPlane runs the upstream components without podtrace's
	// seams (no API or scheduling stages, faults or breakpoints there): the
	// baseline that measures what the seams cost.
	PlainControlPlane bool
	// Untraced runs every component without podtrace's seams: the control
	// plane as PlainControlPlane does, and each kubelet straight on its
	// runtime, with no CRI interposer (NodeSet.Hooks is empty): no stage events,
	// faults or breakpoints anywhere. The baseline that measures what
	// tracing costs a pod.
	Untraced bool
	// MemoryLimit is the Go runtime's soft memory limit in bytes while the
	// engine runs (the process's, so set once per process): 0 means
	// DefaultMemoryLimit, negative leaves it alone; GOMEMLIMIT, when set,
	// always wins.
	MemoryLimit int64
}

// hostBridges says the nodes run real containers on bridges in the host's
// network namespace (hostnet.go): cfg.Runtime gives each node's pods a
// gateway there.
func (cfg Config) hostBridges() bool { return cfg.Runtime != nil && cfg.Runtime.Gateway != nil }

// gateway is node n's pods' gateway on its bridge, its address there
// (hostBridges); nil for a node without a pod range.
func (cfg Config) gateway(n nodes.Spec) net.IP {
	_, cidr, err := net.ParseCIDR(n.PodCIDR)
	if err != nil {
		return nil
	}
	return cfg.Runtime.Gateway(cidr)
}

// Engine is a running cluster.
type Engine struct {
	*controlplane.ControlPlane
	Hub    *trace.Hub
	Tracer *trace.Tracer
	// NodeSet runs the kubelets and their interposers (engine/nodeset).
	NodeSet *nodeset.Set
	// DNS is the cluster's DNS server (CoreDNS, engine/upstream), nil
	// where it cannot run; NoClusterDNS then says why.
	DNS          *upstream.CoreDNS
	NoClusterDNS error
	// Proxy is kube-proxy (engine/upstream), which makes Services route,
	// nil where it cannot run; NoServiceProxy then says why.
	Proxy          *upstream.KubeProxy
	NoServiceProxy error

	speed           atomic.Uint64 // math.Float64bits of the runtime speed
	cancel          context.CancelFunc
	restoreMemLimit func()
	podCIDRs        map[string]string // each node's pod range, by name
	dnsServers      []string          // the kubelets' clusterDNS
	proxyOwner      string            // where kube-proxy's host tables are claimed (hostnet.go)
}

// Start brings the whole cluster up; it stops when ctx ends or Close is called.
func Start(ctx context.Context, cfg Config) (*Engine, error) {
	if cfg.Speed == 0 {
		cfg.Speed = 1
	}
	if err := cri.ValidateSpeed(cfg.Speed); err != nil {
		return nil, err
	}
	e := &Engine{Hub: trace.NewHub(), restoreMemLimit: applyMemoryLimit(cfg.MemoryLimit)}
	e.speed.Store(math.Float64bits(cfg.Speed))
	e.Tracer = trace.New(clock.RealClock{}, e.Hub)
	ctx, e.cancel = context.WithCancel(ctx)
	names := make([]string, len(cfg.Nodes))
	for i, n := range cfg.Nodes {
		names[i] = n.Name
	}
	controlPlaneTracer := e.Tracer
	if cfg.PlainControlPlane || cfg.Untraced {
		controlPlaneTracer = nil
	}
	cp, err := controlplane.Launch(ctx, controlplane.Config{DataDir: cfg.DataDir, Listener: cfg.APIListener, EtcdEndpoints: cfg.EtcdEndpoints,
		EtcdTLS: cfg.EtcdTLS, UnsafeNoFsync: cfg.UnsafeNoFsync, Tracer: controlPlaneTracer,
		KubeletDial: node.Dial, AdvertiseAddress: hostAPIAddress(cfg)})
	if err != nil {
		e.cancel()
		e.restoreMemLimit()
		return nil, err
	}
	e.ControlPlane = cp
	e.claimHostProxy(ctx, cfg)
	// CoreDNS starts while the kubelets do: they need only its address.
	// With real containers it answers on a node's bridge, after the nodes.
	dns := make(chan error, 1)
	if e.dnsServers = e.clusterDNS(cfg); e.dnsServers != nil && !cfg.hostBridges() {
		go func() { dns <- e.startCoreDNS(ctx, simDNS) }()
	} else {
		dns <- nil
	}
	// The kubelets start while kube-controller-manager's controllers do
	// their first work: they need only kube-apiserver.
	cpReady := make(chan error, 1)
	readyCtx, stopWaiting := context.WithCancel(ctx)
	go func() { cpReady <- cp.WaitReady(readyCtx) }()
	if err = e.startNodes(ctx, cfg); err != nil {
		stopWaiting()
	}
	if cpErr := <-cpReady; err == nil {
		err = cpErr
	}
	stopWaiting()
	if dnsErr := <-dns; err == nil {
		err = dnsErr
	}
	if err == nil && e.serviceProxy(cfg) {
		err = e.startKubeProxy(ctx, cfg)
	} else if e.NoServiceProxy != nil {
		klog.InfoS("Running without kube-proxy", "reason", e.NoServiceProxy)
	}
	if err == nil && cfg.hostBridges() && e.dnsServers != nil {
		err = e.hostDNS(ctx, cfg)
	}
	if err == nil {
		err = e.hostAPI(ctx, cfg)
	}
	if err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

func (e *Engine) client(user identity.User, agent string) (kubernetes.Interface, error) {
	return e.ControlPlane.Client(user, agent+"/"+version.Kubernetes+" (podtrace)")
}

// AdminClient returns a clientset acting as kubernetes-admin.
func (e *Engine) AdminClient() kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(e.AdminConfig())
}

// AdminRestConfig returns the admin's client configuration.
func (e *Engine) AdminRestConfig() *rest.Config { return e.AdminConfig() }

// NodeCount returns how many nodes the engine runs.
func (e *Engine) NodeCount() int {
	if e.NodeSet == nil {
		return 0
	}
	return e.NodeSet.Len()
}

// Close stops every component, the API server and etcd.
func (e *Engine) Close() error {
	// Not every loop of an in-process kubelet ends with its context: the
	// runtimes refuse new pods from here on, so none starts after the
	// nodes' pods are removed.
	if e.NodeSet != nil {
		e.NodeSet.Stop()
	}
	e.cancel()
	defer e.restoreMemLimit()
	if e.DNS != nil {
		e.DNS.Stop() // before kube-apiserver, which its watches would miss
	}
	if e.Proxy != nil {
		e.Proxy.Stop()
	} else if e.proxyOwner != "" {
		upstream.ReleaseKubeProxyTables(e.proxyOwner)
	}
	if e.NodeSet != nil {
		e.NodeSet.Shutdown(context.Background()) // saves the records a restart on the data dir finds
	}
	if e.ControlPlane != nil {
		return e.ControlPlane.Close()
	}
	return nil
}

// Speed is the simulated runtime's speed: its latencies are divided by it.
func (e *Engine) Speed() float64 { return math.Float64frombits(e.speed.Load()) }

// SetSpeed changes the simulated runtime's speed from the next wait on;
// the limits are cri.ValidateSpeed's.
func (e *Engine) SetSpeed(speed float64) error {
	if err := cri.ValidateSpeed(speed); err != nil {
		return err
	}
	e.speed.Store(math.Float64bits(speed))
	return nil
}
