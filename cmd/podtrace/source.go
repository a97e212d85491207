package main

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	nodeutil "k8s.io/kubernetes/pkg/util/node"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/apply"
	"github.com/podtrace/podtrace/engine/attach"
	crisim "github.com/podtrace/podtrace/engine/cri/sim"
	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/source/rows"
	"github.com/podtrace/podtrace/stages"
	"github.com/podtrace/podtrace/tui"
)

//go:embed workloads/*.yaml
var workloadFS embed.FS

// engineSource shows the embedded engine in the UI. It can exist before the
// engine has started (the UI then draws "etcd starting"): attach connects it.
type engineSource struct {
	ctx   context.Context
	kube  chan tui.K8sEvent
	ready chan struct{} // closed by attach

	// Set by attach before ready is closed; read only once ready is.
	e       *engine.Engine
	client  kubernetes.Interface
	applier *apply.Applier
	sub     *trace.Subscription
	nodes   nodeCounter
	rows    *rows.Feed // the objects' rows, fed once attached

	mu     sync.Mutex
	status tui.Status
}

// errStarting answers commands sent before the cluster is up.
var errStarting = errors.New("the cluster is still starting")

// newSource returns a source whose engine is still starting.
func newSource(ctx context.Context) *engineSource {
	return &engineSource{ctx: ctx, kube: make(chan tui.K8sEvent, kubeEventBuffer), ready: make(chan struct{}),
		rows: rows.NewFeed(ctx), status: tui.Status{Etcd: "starting"}}
}

// newEngineSource returns a source on a started engine.
func newEngineSource(ctx context.Context, e *engine.Engine) (*engineSource, error) {
	s := newSource(ctx)
	if err := s.attach(e); err != nil {
		return nil, err
	}
	return s, nil
}

// attach connects the source to the started engine. Call it once.
func (s *engineSource) attach(e *engine.Engine) error {
	a, err := apply.New(e.AdminConfig())
	if err != nil {
		return err
	}
	s.e, s.client, s.applier, s.sub = e, e.AdminClient(), a, e.Hub.Subscribe()
	if err := s.watch(); err != nil {
		s.sub.Close()
		return err
	}
	s.mu.Lock()
	s.status.NodesTotal = e.NodeCount()
	s.mu.Unlock()
	close(s.ready)
	go refreshEachSecond(s.ctx, &s.mu, &s.status, s.readStatus)
	return nil
}

// engine returns the engine once attached, else nil.
func (s *engineSource) engine() *engine.Engine {
	select {
	case <-s.ready:
		return s.e
	default:
		return nil
	}
}

// setFailed shows in the header that the cluster did not start.
func (s *engineSource) setFailed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status.Etcd = "failed"
}

// kubeEventBuffer is how many Kubernetes Events wait for the UI's next frame
// before new ones are dropped (the informer must never block).
const kubeEventBuffer = 16384

// watch starts the informers the UI reads: the cluster's core/v1 Events,
// in every namespace, fed to the events pane, its Nodes, which the header
// counts, and the objects the lanes show, as kubectl prints them.
func (s *engineSource) watch() error {
	f := informers.NewSharedInformerFactory(s.client, 0)
	s.nodes = newNodeCounter(f)
	if err := rows.Watch(f, time.Now, nil, s.rows.Push); err != nil {
		return err
	}
	inf := f.Core().V1().Events().Informer()
	send := func(obj any) {
		ev, ok := obj.(*corev1.Event)
		if !ok {
			return
		}
		select {
		case s.kube <- kubeEvent(ev):
		default:
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: send,
		UpdateFunc: func(_, obj any) { send(obj) }}); err != nil {
		return fmt.Errorf("watch events: %w", err)
	}
	f.Start(s.ctx.Done())
	return nil
}

// kubeEvent is ev as the events pane shows it, with kubectl's times and
// count whichever recorder wrote it (legacy first/lastTimestamp and count,
// or events.k8s.io/v1's eventTime and series).
func kubeEvent(ev *corev1.Event) tui.K8sEvent {
	src := ev.Source.Component
	if src == "" {
		src = ev.ReportingController
	}
	return tui.K8sEvent{Type: ev.Type, Reason: ev.Reason, Source: src, Message: ev.Message, Count: attach.EventCount(ev),
		LastSeen: attach.EventTime(ev), FirstSeen: attach.EventFirstTime(ev), Namespace: ev.Namespace, Name: ev.Name,
		Object: strings.ToLower(ev.InvolvedObject.Kind) + "/" + ev.InvolvedObject.Name}
}

// Rows delivers the objects' rows; nil while the engine starts.
func (s *engineSource) Rows() <-chan stages.Row {
	if s.engine() == nil {
		return nil
	}
	return s.rows.C()
}

// KubeEvents delivers the cluster's Kubernetes Events.
func (s *engineSource) KubeEvents() <-chan tui.K8sEvent { return s.kube }

// readStatus is the header's facts: etcd's health and the nodes.
func (s *engineSource) readStatus() tui.Status {
	st := tui.Status{NodesTotal: s.e.NodeCount(), Etcd: "healthy"}
	if err := s.e.Etcd.Healthy(s.ctx); err != nil {
		st.Etcd = "unhealthy"
	}
	s.nodes.count(&st)
	return st
}

// nodeCounter is the header's view of the Nodes, from an informer.
type nodeCounter struct {
	lister corelisters.NodeLister
	synced cache.InformerSynced
}

// newNodeCounter registers a Node informer with f (start f after).
func newNodeCounter(f informers.SharedInformerFactory) nodeCounter {
	n := f.Core().V1().Nodes()
	return nodeCounter{lister: n.Lister(), synced: n.Informer().HasSynced}
}

// count sets st's nodes from the informer once it has synced; until then
// st keeps what it had.
func (c nodeCounter) count(st *tui.Status) {
	if !c.synced() {
		return
	}
	list, _ := c.lister.List(labels.Everything())
	st.NodesTotal = len(list)
	for _, n := range list {
		countNode(st, n)
	}
}

// countNode adds n to the header's facts: whether it is Ready, and the
// container runtime it reports (kubectl get nodes -o wide's
// CONTAINER-RUNTIME without its version; podtrace's own is "simulated").
func countNode(st *tui.Status, n *corev1.Node) {
	if nodeutil.IsNodeReady(n) {
		st.NodesReady++
	}
	if st.Runtime == "" {
		name, _, _ := strings.Cut(n.Status.NodeInfo.ContainerRuntimeVersion, "://")
		if name == crisim.RuntimeName {
			name = "simulated"
		}
		st.Runtime = name
	}
}

// refreshEachSecond sets *status to read() (under mu) now and once a
// second until ctx ends: a source's header facts, read off the UI
// goroutine.
func refreshEachSecond(ctx context.Context, mu *sync.Mutex, status *tui.Status, read func() tui.Status) {
	for {
		st := read()
		mu.Lock()
		*status = st
		mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func (s *engineSource) Name() string { return "embedded" }

// Events returns the engine's stage events; nil while it starts.
func (s *engineSource) Events() <-chan stages.Event {
	if s.engine() == nil {
		return nil
	}
	return s.sub.C()
}

func (s *engineSource) Status() tui.Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

func (s *engineSource) Workloads() []tui.Workload {
	entries, _ := workloadFS.ReadDir("workloads")
	var out []tui.Workload
	for _, ent := range entries {
		data, err := workloadFS.ReadFile(path.Join("workloads", ent.Name()))
		if err != nil {
			continue
		}
		desc := strings.TrimPrefix(strings.SplitN(string(data), "\n", 2)[0], "# ")
		out = append(out, tui.Workload{Name: strings.TrimSuffix(ent.Name(), ".yaml"), Description: desc, Manifest: data})
	}
	return out
}

func (s *engineSource) Apply(manifest []byte) error {
	if s.engine() == nil {
		return errStarting
	}
	_, err := s.applier.Apply(s.ctx, manifest, "manifest")
	return err
}

func (s *engineSource) DeletePod(namespace, name string) error {
	if s.engine() == nil {
		return errStarting
	}
	return s.client.CoreV1().Pods(namespace).Delete(s.ctx, name, metav1.DeleteOptions{})
}

func (s *engineSource) Scale(namespace, kind, name string, replicas int) error {
	if s.engine() == nil {
		return errStarting
	}
	patch := []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas))
	apps := s.client.AppsV1()
	var err error
	switch kind {
	case stages.KindDeployment:
		_, err = apps.Deployments(namespace).Patch(s.ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "scale")
	case stages.KindReplicaSet:
		_, err = apps.ReplicaSets(namespace).Patch(s.ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "scale")
	default:
		err = fmt.Errorf("%s %s has no replicas to scale", kind, name)
	}
	return err
}

func (s *engineSource) PodDetail(namespace, name string) (tui.PodDetail, error) {
	if s.engine() == nil {
		return tui.PodDetail{}, errStarting
	}
	return podDetail(s.ctx, s.client, namespace, name)
}

// Faults returns the engine's fault controls; nil while it starts.
func (s *engineSource) Faults() tui.FaultControl {
	if s.engine() == nil {
		return nil
	}
	return faultControl{t: s.e.Tracer}
}

// Clock returns the engine's clock controls; nil while it starts.
func (s *engineSource) Clock() tui.ClockControl {
	if s.engine() == nil {
		return nil
	}
	return paceControl{s.e}
}
