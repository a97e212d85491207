// Package kubelet is podtrace's node agent: one Kubelet per simulated node
// registers its Node, renews its Lease, watches the pods bound to it and
// takes each through the node-side stages (kubelet, sandbox, cni, pull,
// create, start, hooks, ready) and back down on deletion (terminate,
// cleanup), on a container runtime and network plugin behind small
// CRI/CNI-shaped interfaces. Reasons and messages follow kubelet 1.36.3.
package kubelet

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"

	"github.com/podtrace/podtrace/engine/kubelet/network"
	netsim "github.com/podtrace/podtrace/engine/kubelet/network/sim"
	"github.com/podtrace/podtrace/engine/kubelet/nodes"
	"github.com/podtrace/podtrace/engine/kubelet/runtime"
	rtsim "github.com/podtrace/podtrace/engine/kubelet/runtime/sim"
	"github.com/podtrace/podtrace/engine/kubelet/status"
	"github.com/podtrace/podtrace/engine/trace"
)

// Component is the stage-event component and event source of every kubelet.
const Component = "kubelet"

// Back-off periods, as the kubelet sets them.
const (
	ImageBackOffPeriod   = 10 * time.Second
	MaxImageBackOff      = 300 * time.Second
	CrashBackOffPeriod   = 10 * time.Second
	MaxCrashLoopBackOff  = 300 * time.Second
	VolumeBackOffInitial = 500 * time.Millisecond
	VolumeBackOffMax     = 2*time.Minute + 2*time.Second
	SyncBackOffPeriod    = 10 * time.Second // sandbox and network failures
)

// Config configures one node's kubelet.
type Config struct {
	// Client talks to the API server as system:node:<NodeName>.
	Client   kubernetes.Interface
	NodeName string
	Clock    clock.WithTicker
	Tracer   *trace.Tracer
	// Runtime defaults to a simulated runtime with the default latency and Seed.
	Runtime runtime.Runtime
	// RuntimeName prefixes container IDs ("podtrace-sim://<id>").
	RuntimeName string
	// Network defaults to a simulated plugin allocating from PodCIDR.
	Network network.Plugin
	// Capacity defaults to 4 cpu, 8Gi, 110 pods; allocatable equals capacity.
	Capacity v1.ResourceList
	Labels   map[string]string
	Taints   []v1.Taint
	// PodCIDR is the node's pod range, e.g. 10.244.1.0/24.
	PodCIDR string
	// InternalIP is the node's address and the pods' hostIP; a 127.x.y.z
	// address derived from the name when empty.
	InternalIP string
	Seed       int64
	// Recorder records Kubernetes Events; one writing through Client when nil.
	Recorder record.EventRecorder
	// StatusWorkers is the number of concurrent pods/status writers (default 2).
	StatusWorkers int
	// LeaseDuration (40 s) and LeaseRenewInterval (10 s) of the node Lease.
	LeaseDuration      time.Duration
	LeaseRenewInterval time.Duration
	// NodeStatusReportFrequency is how often an unchanged node status is
	// written anyway (5 min).
	NodeStatusReportFrequency time.Duration
	// ServingCert issues the TLS certificate of the kubelet's API server for
	// the node's address. With it, Start serves pods' logs, exec, attach and
	// port-forward on InternalIP and a free port, which the node advertises
	// for kube-apiserver to reach; without it the node serves none and
	// advertises port 10250.
	ServingCert func(ip net.IP) (tls.Certificate, error)
}

// Kubelet runs one node.
type Kubelet struct {
	cfg      Config
	client   kubernetes.Interface
	clock    clock.WithTicker
	tracer   *trace.Tracer
	rt       runtime.Runtime
	net      network.Plugin
	recorder record.EventRecorder
	status   *status.Manager

	imageBackOff *flowcontrol.Backoff
	crashBackOff *flowcontrol.Backoff
	pullMu       sync.Mutex // serializeImagePulls, the kubelet default

	podLister       func() []*v1.Pod
	notReady        atomic.Bool
	registered      atomic.Bool
	lastRegisterErr atomic.Value
	nodeDirty       chan struct{}

	mu          sync.Mutex
	workers     map[types.UID]*podWorker
	byContainer map[string]*podWorker
	// terminated holds pods taken down whose object is not yet gone from
	// the informer, so late updates do not start them again.
	terminated map[types.UID]struct{}
	ctx        context.Context
	apiPort    int32 // the kubelet API server's, set by Start
}

// New checks cfg, fills in defaults and returns a kubelet ready to Start.
func New(cfg Config) (*Kubelet, error) {
	if cfg.Client == nil {
		return nil, errors.New("kubelet: Client is required")
	}
	if cfg.NodeName == "" {
		return nil, errors.New("kubelet: NodeName is required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Capacity == nil {
		cfg.Capacity = nodes.DefaultCapacity()
	}
	if cfg.PodCIDR == "" {
		cfg.PodCIDR = nodes.PodCIDR(0)
	}
	if cfg.InternalIP == "" {
		h := fnv.New32a()
		h.Write([]byte(cfg.NodeName))
		v := h.Sum32()
		cfg.InternalIP = fmt.Sprintf("127.%d.%d.%d", 1+byte(v>>16)%254, byte(v>>8), 1+byte(v)%254)
	}
	if cfg.RuntimeName == "" {
		cfg.RuntimeName = "podtrace-sim"
	}
	if cfg.StatusWorkers == 0 {
		cfg.StatusWorkers = 2
	}
	if cfg.LeaseDuration == 0 {
		cfg.LeaseDuration = 40 * time.Second
	}
	if cfg.LeaseRenewInterval == 0 {
		cfg.LeaseRenewInterval = 10 * time.Second
	}
	if cfg.NodeStatusReportFrequency == 0 {
		cfg.NodeStatusReportFrequency = 5 * time.Minute
	}
	if cfg.Runtime == nil {
		cfg.Runtime = rtsim.New(rtsim.Config{Clock: cfg.Clock, Seed: cfg.Seed, Node: cfg.NodeName})
	}
	if cfg.Network == nil {
		pl, err := netsim.New(cfg.PodCIDR, cfg.Clock, 0)
		if err != nil {
			return nil, fmt.Errorf("kubelet %s: %w", cfg.NodeName, err)
		}
		cfg.Network = pl
	}
	k := &Kubelet{
		cfg: cfg, client: cfg.Client, clock: cfg.Clock, tracer: cfg.Tracer, rt: cfg.Runtime, net: cfg.Network,
		recorder:     cfg.Recorder,
		status:       status.NewManager(cfg.Client),
		imageBackOff: flowcontrol.NewFakeBackOff(ImageBackOffPeriod, MaxImageBackOff, cfg.Clock),
		crashBackOff: flowcontrol.NewFakeBackOff(CrashBackOffPeriod, MaxCrashLoopBackOff, cfg.Clock),
		nodeDirty:    make(chan struct{}, 1),
		workers:      map[types.UID]*podWorker{},
		byContainer:  map[string]*podWorker{},
		terminated:   map[types.UID]struct{}{},
	}
	return k, nil
}

// NodeName returns the node this kubelet runs.
func (k *Kubelet) NodeName() string { return k.cfg.NodeName }

// StatusWrites returns how many pods/status writes this kubelet made.
func (k *Kubelet) StatusWrites() int64 { return k.status.Writes() }

// ContainerLogs returns the lines the named container of pod namespace/name
// has written; previous selects the instance before the current one, as
// `kubectl logs --previous` does.
func (k *Kubelet) ContainerLogs(ctx context.Context, namespace, name, container string, previous bool) ([]runtime.LogLine, error) {
	k.mu.Lock()
	var w *podWorker
	for _, x := range k.workers {
		if p := x.currentPod(); p.Namespace == namespace && p.Name == name {
			w = x
		}
	}
	k.mu.Unlock()
	if w == nil {
		return nil, fmt.Errorf("pod %s/%s is not running on node %s", namespace, name, k.cfg.NodeName)
	}
	ids := w.logIDs(container)
	id := ids[0]
	if previous {
		id = ids[1]
		if id == "" {
			return nil, fmt.Errorf("previous terminated container %q in pod %q not found", container, name)
		}
	}
	if id == "" {
		return nil, fmt.Errorf("container %q in pod %q is waiting to start: ContainerCreating", container, name)
	}
	return k.rt.ContainerLogs(ctx, id)
}

// StatusError returns the last failed pods/status write's error, if any.
func (k *Kubelet) StatusError() string { return k.status.LastError() }

// Runtime returns the container runtime (for pods/log and tests).
func (k *Kubelet) Runtime() runtime.Runtime { return k.rt }

// Start registers the node (retrying in the background until it succeeds) and starts the lease, node status, pod informer,
// runtime event and status writer loops; they stop when ctx is done.
func (k *Kubelet) Start(ctx context.Context) error {
	k.ctx = ctx
	if k.recorder == nil {
		b := record.NewBroadcaster(record.WithContext(ctx), record.WithCorrelatorOptions(record.CorrelatorOptions{Clock: k.clock}))
		b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: k.client.CoreV1().Events("")})
		k.recorder = b.NewRecorder(scheme.Scheme, v1.EventSource{Component: Component, Host: k.cfg.NodeName})
		go func() { <-ctx.Done(); b.Shutdown() }()
	}
	if err := k.serveAPI(ctx); err != nil {
		return err
	}
	k.status.Start(ctx, k.cfg.StatusWorkers)
	go func() {
		if k.registerWithRetry(ctx) {
			go k.leaseLoop(ctx)
			go k.nodeStatusLoop(ctx)
		}
	}()
	go k.runtimeEvents(ctx)

	factory := informers.NewSharedInformerFactoryWithOptions(k.client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "spec.nodeName=" + k.cfg.NodeName }))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.podUpdated(obj) },
		UpdateFunc: func(_, obj any) { k.podUpdated(obj) },
		DeleteFunc: func(obj any) { k.podRemoved(obj) },
	}); err != nil {
		return fmt.Errorf("kubelet %s: add pod handler: %w", k.cfg.NodeName, err)
	}
	lister := factory.Core().V1().Pods().Lister()
	k.podLister = func() []*v1.Pod {
		pods, _ := lister.List(labels.Everything())
		return pods
	}
	factory.Start(ctx.Done())
	return nil
}

// registerWithRetry registers the node, retrying with back-off (100 ms
// doubling to 7 s) as the kubelet's registerWithAPIServer does; it reports
// false when ctx ended first.
func (k *Kubelet) registerWithRetry(ctx context.Context) bool {
	delay := 100 * time.Millisecond
	for {
		err := k.registerNode(ctx)
		if err == nil {
			k.registered.Store(true)
			return true
		}
		k.lastRegisterErr.Store(err.Error())
		select {
		case <-ctx.Done():
			return false
		case <-k.clock.After(delay):
		}
		delay = min(2*delay, 7*time.Second)
	}
}

// Registered reports whether the Node object was created; RegisterError
// returns the last registration error while it was not.
func (k *Kubelet) Registered() bool { return k.registered.Load() }

// RegisterError returns the last node registration error, if any.
func (k *Kubelet) RegisterError() string {
	s, _ := k.lastRegisterErr.Load().(string)
	return s
}

// SetNotReady makes the node report Ready=False (true) or Ready=True again (false).
func (k *Kubelet) SetNotReady(notReady bool) {
	if k.notReady.Swap(notReady) != notReady {
		select {
		case k.nodeDirty <- struct{}{}:
		default:
		}
	}
}

// NotReady reports whether the node was made NotReady.
func (k *Kubelet) NotReady() bool { return k.notReady.Load() }

func (k *Kubelet) podUpdated(obj any) {
	pod, ok := obj.(*v1.Pod)
	if !ok || pod.Spec.NodeName != k.cfg.NodeName {
		return
	}
	k.mu.Lock()
	if _, done := k.terminated[pod.UID]; done {
		k.mu.Unlock()
		return // an old version of a pod this kubelet already took down
	}
	w, ok := k.workers[pod.UID]
	if !ok {
		if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
			if pod.DeletionTimestamp == nil {
				k.mu.Unlock()
				return // finished before this kubelet started: nothing to run
			}
		}
		w = newPodWorker(k, pod)
		k.workers[pod.UID] = w
		k.mu.Unlock()
		go w.run(k.ctx)
		return
	}
	k.mu.Unlock()
	k.status.UpdatePod(pod)
	w.update(pod)
}

func (k *Kubelet) podRemoved(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	k.mu.Lock()
	w := k.workers[pod.UID]
	delete(k.terminated, pod.UID)
	k.mu.Unlock()
	if w != nil {
		w.remove()
	}
}

func (k *Kubelet) forget(w *podWorker) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.workers[w.uid] == w {
		delete(k.workers, w.uid)
		if w.isTerminated() {
			k.terminated[w.uid] = struct{}{}
		}
	}
	for id, x := range k.byContainer {
		if x == w {
			delete(k.byContainer, id)
		}
	}
	k.status.Forget(w.uid)
}

func (k *Kubelet) trackContainer(id string, w *podWorker) {
	k.mu.Lock()
	k.byContainer[id] = w
	k.mu.Unlock()
}

// runtimeEvents wakes the worker owning a container when its state changes.
func (k *Kubelet) runtimeEvents(ctx context.Context) {
	for e := range k.rt.Events(ctx) {
		k.mu.Lock()
		w := k.byContainer[e.ContainerID]
		k.mu.Unlock()
		if w != nil {
			w.wake()
		}
	}
}

// activePods returns the pods this kubelet admitted that still hold resources.
func (k *Kubelet) activePods(except types.UID) []*v1.Pod {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []*v1.Pod
	for uid, w := range k.workers {
		if uid != except && w.holdsResources() {
			out = append(out, w.currentPod())
		}
	}
	return out
}
