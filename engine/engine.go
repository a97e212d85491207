// Package engine runs podtrace's embedded cluster in one process: etcd and
// the API server (controlplane), the Deployment, ReplicaSet, garbage
// collector and serviceaccount controllers, the scheduler, and one kubelet
// per node, every component talking to the API server over loopback HTTPS
// with its own identity and reporting stage events to one Hub.
package engine

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/podtrace/podtrace/engine/apiserver/authn"
	"github.com/podtrace/podtrace/engine/clock"
	"github.com/podtrace/podtrace/engine/controllers/deployment"
	"github.com/podtrace/podtrace/engine/controllers/endpoint"
	"github.com/podtrace/podtrace/engine/controllers/endpointslice"
	"github.com/podtrace/podtrace/engine/controllers/garbagecollector"
	"github.com/podtrace/podtrace/engine/controllers/job"
	"github.com/podtrace/podtrace/engine/controllers/namespace"
	"github.com/podtrace/podtrace/engine/controllers/namespacedefaults"
	"github.com/podtrace/podtrace/engine/controllers/replicaset"
	"github.com/podtrace/podtrace/engine/controlplane"
	"github.com/podtrace/podtrace/engine/kubelet"
	"github.com/podtrace/podtrace/engine/kubelet/network"
	"github.com/podtrace/podtrace/engine/kubelet/nodes"
	"github.com/podtrace/podtrace/engine/kubelet/runtime"
	"github.com/podtrace/podtrace/engine/scheduler"
	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/version"
)

// Config describes the cluster to run.
type Config struct {
	// DataDir keeps the cluster across restarts; empty means temporary.
	DataDir string
	// EtcdEndpoints use an external etcd instead of the embedded one.
	EtcdEndpoints []string
	// UnsafeNoFsync turns etcd's fsync off (benchmarks).
	UnsafeNoFsync bool
	// Nodes to run a kubelet for.
	Nodes []nodes.Spec
	// Speed of the engine clock (1 = real time).
	Speed float64
	// Seed makes the simulated runtime and the scheduler's tie-breaks repeatable.
	Seed int64
	// NewRuntime builds a node's container runtime; the simulated one when nil.
	NewRuntime func(node string, clk *clock.Clock, seed int64) runtime.Runtime
	// NewNetwork builds a node's network plugin; the simulated one when nil.
	NewNetwork func(node string) network.Plugin
	// RuntimeName prefixes container IDs in pod status ("containerd://");
	// the kubelet's default when empty.
	RuntimeName string
	// MemoryLimit is the Go runtime's soft memory limit in bytes while the
	// engine runs (the process's, so set once per process): 0 means
	// DefaultMemoryLimit, negative leaves it alone; GOMEMLIMIT, when set,
	// always wins.
	MemoryLimit int64
}

// Engine is a running cluster.
type Engine struct {
	*controlplane.ControlPlane
	Clock     *clock.Clock
	Hub       *trace.Hub
	Tracer    *trace.Tracer
	Scheduler *scheduler.Scheduler
	Kubelets  []*kubelet.Kubelet

	cancel          context.CancelFunc
	restoreMemLimit func()
}

// Start brings the whole cluster up; it stops when ctx ends or Close is called.
func Start(ctx context.Context, cfg Config) (*Engine, error) {
	if cfg.Speed == 0 {
		cfg.Speed = 1
	}
	if err := clock.ValidateSpeed(cfg.Speed); err != nil {
		return nil, err
	}
	e := &Engine{Clock: clock.New(time.Now(), cfg.Speed), Hub: trace.NewHub(), restoreMemLimit: applyMemoryLimit(cfg.MemoryLimit)}
	e.Tracer = trace.New(e.Clock, e.Hub)
	ctx, e.cancel = context.WithCancel(ctx)
	names := make([]string, len(cfg.Nodes))
	for i, n := range cfg.Nodes {
		names[i] = n.Name
	}
	users := append(authn.ComponentUsers(names...),
		authn.ServiceAccountUser("kube-system", "generic-garbage-collector"),
		authn.ServiceAccountUser("kube-system", "namespace-defaults"),
		authn.ServiceAccountUser("kube-system", "namespace-controller"),
		authn.ServiceAccountUser("kube-system", "endpointslice-controller"),
		authn.ServiceAccountUser("kube-system", "endpoint-controller"),
		authn.ServiceAccountUser("kube-system", "job-controller"))
	cp, err := controlplane.Start(ctx, controlplane.Config{DataDir: cfg.DataDir, EtcdEndpoints: cfg.EtcdEndpoints,
		UnsafeNoFsync: cfg.UnsafeNoFsync, Clock: e.Clock, Tracer: e.Tracer, Users: users, PodLogs: e.podLogs,
		PodExec: e.podExec, PodPortForward: e.podPortForward, PodAttach: e.podAttach})
	if err != nil {
		e.cancel()
		e.restoreMemLimit()
		return nil, err
	}
	e.ControlPlane = cp
	if err := e.startComponents(ctx, cfg); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

func (e *Engine) client(user authn.User, agent string) (kubernetes.Interface, error) {
	return e.ControlPlane.Client(user, agent+"/"+version.Kubernetes+" (podtrace)")
}

// kubeletsPerEventBroadcaster is how many kubelets share one client-go
// event broadcaster (each still writing its events as itself): few enough
// that one writer keeps up with their events and its queues (1,000 events
// in, 1,000 to the writer) hold every event of 4 full nodes' pods starting
// at once (4 × 110 pods × Pulling, Pulled, Created, Started), many enough
// to save most of the broadcasters' memory (~70 KB each) at 500 nodes.
const kubeletsPerEventBroadcaster = 4

func (e *Engine) startComponents(ctx context.Context, cfg Config) error {
	type starter interface{ Start(context.Context) error }
	var all []starter
	sa := func(name string) authn.User { return authn.ServiceAccountUser("kube-system", name) }
	// kube-controller-manager's shared informers: one cache of each kind for
	// every controller, watching as system:kube-controller-manager.
	kcm, err := e.client(authn.User{Name: authn.KubeControllerManager}, "kube-controller-manager")
	if err != nil {
		return err
	}
	shared := informers.NewSharedInformerFactory(kcm, 0)

	c, err := e.client(sa("replicaset-controller"), "kube-controller-manager")
	if err != nil {
		return err
	}
	rs, err := replicaset.New(replicaset.Config{Client: c, Clock: e.Clock, Tracer: e.Tracer, Informers: shared})
	if err != nil {
		return err
	}
	if c, err = e.client(sa("job-controller"), "kube-controller-manager"); err != nil {
		return err
	}
	jc, err := job.New(job.Config{Client: c, Clock: e.Clock, Tracer: e.Tracer, Informers: shared})
	if err != nil {
		return err
	}
	if c, err = e.client(sa("deployment-controller"), "kube-controller-manager"); err != nil {
		return err
	}
	dc, err := deployment.New(deployment.Config{Client: c, Clock: e.Clock, Tracer: e.Tracer, Informers: shared})
	if err != nil {
		return err
	}
	if c, err = e.client(sa("generic-garbage-collector"), "kube-controller-manager"); err != nil {
		return err
	}
	gc, err := garbagecollector.New(garbagecollector.Config{Client: c, Clock: e.Clock, Informers: shared})
	if err != nil {
		return err
	}
	if c, err = e.client(sa("namespace-defaults"), "kube-controller-manager"); err != nil {
		return err
	}
	sac, err := namespacedefaults.New(namespacedefaults.Config{Client: c, Clock: e.Clock, CACert: e.PKI.CAPEM, Informers: shared})
	if err != nil {
		return err
	}
	nsCfg, err := e.ControlPlane.RestConfig(sa("namespace-controller"), "kube-controller-manager/"+version.Kubernetes+" (podtrace)")
	if err != nil {
		return err
	}
	nsc, err := namespace.New(namespace.Config{RestConfig: nsCfg, Clock: e.Clock, Informers: shared})
	if err != nil {
		return err
	}
	if c, err = e.client(sa("endpointslice-controller"), "kube-controller-manager"); err != nil {
		return err
	}
	esc, err := endpointslice.New(endpointslice.Config{Client: c, Clock: e.Clock, Informers: shared})
	if err != nil {
		return err
	}
	if c, err = e.client(sa("endpoint-controller"), "kube-controller-manager"); err != nil {
		return err
	}
	epc, err := endpoint.New(endpoint.Config{Client: c, Clock: e.Clock, Informers: shared})
	if err != nil {
		return err
	}
	if c, err = e.client(authn.User{Name: authn.KubeScheduler}, "kube-scheduler"); err != nil {
		return err
	}
	if e.Scheduler, err = scheduler.New(scheduler.Config{Client: c, Clock: e.Clock, Tracer: e.Tracer, Seed: uint64(cfg.Seed)}); err != nil {
		return err
	}
	all = append(all, rs, jc, dc, gc, sac, nsc, esc, epc, e.Scheduler)
	events := kubelet.NewEventHub(ctx, e.Clock, kubeletsPerEventBroadcaster)
	for i, n := range cfg.Nodes {
		if c, err = e.client(authn.NodeUser(n.Name), "kubelet"); err != nil {
			return err
		}
		kc := kubelet.Config{Client: c, NodeName: n.Name, Clock: e.Clock, Tracer: e.Tracer, Capacity: n.Capacity,
			Labels: n.Labels, Taints: n.Taints, PodCIDR: n.PodCIDR, Seed: cfg.Seed + int64(i),
			Recorder: events.Recorder(n.Name, c)}
		if cfg.NewRuntime != nil {
			kc.Runtime = cfg.NewRuntime(n.Name, e.Clock, cfg.Seed+int64(i))
		}
		if cfg.NewNetwork != nil {
			kc.Network = cfg.NewNetwork(n.Name)
		}
		kc.RuntimeName = cfg.RuntimeName
		k, err := kubelet.New(kc)
		if err != nil {
			return fmt.Errorf("kubelet %s: %w", n.Name, err)
		}
		e.Kubelets = append(e.Kubelets, k)
		all = append(all, k)
	}
	for _, s := range all {
		if err := s.Start(ctx); err != nil {
			return err
		}
	}
	return nil
}

// AdminClient returns a clientset acting as kubernetes-admin.
func (e *Engine) AdminClient() kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(e.AdminConfig())
}

// AdminRestConfig returns the admin's client configuration.
func (e *Engine) AdminRestConfig() *rest.Config { return e.AdminConfig() }

// Kubelet returns the kubelet of the named node, or nil.
func (e *Engine) Kubelet(node string) *kubelet.Kubelet {
	for _, k := range e.Kubelets {
		if k.NodeName() == node {
			return k
		}
	}
	return nil
}

// Close stops every component, the API server and etcd.
func (e *Engine) Close() error {
	e.cancel()
	defer e.restoreMemLimit()
	if e.ControlPlane != nil {
		return e.ControlPlane.Close()
	}
	return nil
}
