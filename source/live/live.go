// Package live is the UI's source on the embedded cluster: the engine's
// stage events, its objects' rows and Events, and the controls that inject
// faults, hold pods at breakpoints, pause and fast-forward.
package live

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/apply"
	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/source/cluster"
	"github.com/podtrace/podtrace/source/rows"
	"github.com/podtrace/podtrace/stages"
	"github.com/podtrace/podtrace/tui"
)

//go:embed workloads/*.yaml
var workloadFS embed.FS

// Source shows the embedded engine in the UI. It can exist before the
// engine has started (the UI then draws "etcd starting"): Attach connects it.
type Source struct {
	ctx   context.Context
	kube  chan tui.K8sEvent
	ready chan struct{} // closed by Attach

	// Set by Attach before ready is closed; read only once ready is.
	e       *engine.Engine
	client  kubernetes.Interface
	applier *apply.Applier
	sub     *trace.Subscription
	nodes   cluster.NodeCounter
	rows    *rows.Feed // the objects' rows, fed once attached

	mu     sync.Mutex
	status tui.Status
}

// errStarting answers commands sent before the cluster is up.
var errStarting = errors.New("the cluster is still starting")

// New returns a source whose engine is still starting: the UI can draw
// "etcd starting" at once, and Attach connects it.
func New(ctx context.Context) *Source {
	return &Source{ctx: ctx, kube: make(chan tui.K8sEvent, cluster.KubeEventBuffer), ready: make(chan struct{}),
		rows: rows.NewFeed(ctx), status: tui.Status{Etcd: "starting"}}
}

// NewStarted returns a source on a started engine.
func NewStarted(ctx context.Context, e *engine.Engine) (*Source, error) {
	s := New(ctx)
	if err := s.Attach(e); err != nil {
		return nil, err
	}
	return s, nil
}

// Attach connects the source to the started engine. Call it once.
func (s *Source) Attach(e *engine.Engine) error {
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
	go cluster.RefreshEachSecond(s.ctx, &s.mu, &s.status, s.readStatus)
	return nil
}

// Applier applies manifests to the engine once attached (nil before).
func (s *Source) Applier() *apply.Applier {
	if s.Engine() == nil {
		return nil
	}
	return s.applier
}

// TeeRows returns a feed that also gets every row the UI gets, for a
// recording.
func (s *Source) TeeRows(ctx context.Context) *rows.Feed { return s.rows.Tee(ctx) }

// Engine returns the engine once attached, else nil.
func (s *Source) Engine() *engine.Engine {
	select {
	case <-s.ready:
		return s.e
	default:
		return nil
	}
}

// SetFailed shows in the header that the cluster did not start.
func (s *Source) SetFailed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status.Etcd = "failed"
}

// watch starts the informers the UI reads: the cluster's core/v1 Events,
// in every namespace, fed to the events pane, its Nodes, which the header
// counts, and the objects the lanes show, as kubectl prints them.
func (s *Source) watch() error {
	f := informers.NewSharedInformerFactory(s.client, 0)
	s.nodes = cluster.NewNodeCounter(f)
	if err := rows.Watch(f, time.Now, nil, s.rows.Push); err != nil {
		return err
	}
	if err := cluster.WatchEvents(f, s.kube); err != nil {
		return err
	}
	f.Start(s.ctx.Done())
	return nil
}

// Rows delivers the objects' rows; nil while the engine starts.
func (s *Source) Rows() <-chan stages.Row {
	if s.Engine() == nil {
		return nil
	}
	return s.rows.C()
}

// KubeEvents delivers the cluster's Kubernetes Events.
func (s *Source) KubeEvents() <-chan tui.K8sEvent { return s.kube }

// readStatus is the header's facts: etcd's health and the nodes.
func (s *Source) readStatus() tui.Status {
	st := tui.Status{NodesTotal: s.e.NodeCount(), Etcd: "healthy"}
	if err := s.e.Etcd.Healthy(s.ctx); err != nil {
		st.Etcd = "unhealthy"
	}
	s.nodes.Count(&st)
	return st
}

// Name is "embedded".
func (s *Source) Name() string { return "embedded" }

// Events returns the engine's stage events; nil while it starts.
func (s *Source) Events() <-chan stages.Event {
	if s.Engine() == nil {
		return nil
	}
	return s.sub.C()
}

// Status returns the header's facts, refreshed each second.
func (s *Source) Status() tui.Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

// Workloads lists the built-in demo workloads (workloads/*.yaml; each
// file's first comment line describes it).
func (s *Source) Workloads() []tui.Workload {
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

// Apply creates or updates the manifest's objects, as kubectl apply does.
func (s *Source) Apply(manifest []byte) error {
	if s.Engine() == nil {
		return errStarting
	}
	_, err := s.applier.Apply(s.ctx, manifest, "manifest")
	return err
}

// DeletePod deletes the pod, as kubectl delete pod does.
func (s *Source) DeletePod(namespace, name string) error {
	if s.Engine() == nil {
		return errStarting
	}
	return s.client.CoreV1().Pods(namespace).Delete(s.ctx, name, metav1.DeleteOptions{})
}

// Scale sets a Deployment's or ReplicaSet's replicas, as kubectl scale does.
func (s *Source) Scale(namespace, kind, name string, replicas int) error {
	if s.Engine() == nil {
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

// PodDetail reads the pod and its Events.
func (s *Source) PodDetail(namespace, name string) (tui.PodDetail, error) {
	if s.Engine() == nil {
		return tui.PodDetail{}, errStarting
	}
	return cluster.PodDetail(s.ctx, s.client, namespace, name)
}

// Faults returns the engine's fault controls; nil while it starts.
func (s *Source) Faults() tui.FaultControl {
	if s.Engine() == nil {
		return nil
	}
	return faultControl{t: s.e.Tracer}
}

// Clock returns the engine's clock controls; nil while it starts.
func (s *Source) Clock() tui.ClockControl {
	if s.Engine() == nil {
		return nil
	}
	return paceControl{s.e}
}
