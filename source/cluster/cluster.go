// Package cluster is the UI's source on a real cluster (podtrace attach):
// the lanes rebuilt from its objects and Events, read-only, and the
// Kubernetes API readers the embedded source shares (the pod detail, the
// events pane's Events, the header's nodes).
package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/podtrace/podtrace/engine/attach"
	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/source/rows"
	"github.com/podtrace/podtrace/stages"
	"github.com/podtrace/podtrace/tui"
)

// Config says which cluster to attach to and what to watch.
type Config struct {
	// Client reaches the cluster.
	Client kubernetes.Interface
	// Context names the cluster in the header (the kubeconfig's context).
	Context string
	// Namespace is the namespace watched; empty for every namespace.
	Namespace string
	// Target narrows the lanes to one pod or Deployment; zero for all.
	Target attach.Target
	// AuditLog is the API server's audit log (JSON lines) to read authn,
	// authz and admission from; empty for none.
	AuditLog string
}

// Source shows a real cluster in the UI, read-only. Its stage events are
// published on Hub, which the UI, a recording and an export each subscribe to.
type Source struct {
	ctx   context.Context
	cfg   Config
	hub   *trace.Hub
	sub   *trace.Subscription
	kube  chan tui.K8sEvent
	nodes NodeCounter
	rows  *rows.Feed

	mu     sync.Mutex
	status tui.Status
}

// New returns a source on cfg's cluster; Start begins watching it.
func New(ctx context.Context, cfg Config) *Source {
	hub := trace.NewHub()
	s := &Source{ctx: ctx, cfg: cfg, hub: hub, sub: hub.Subscribe(),
		kube: make(chan tui.K8sEvent, KubeEventBuffer), rows: rows.NewFeed(ctx)}
	s.status = s.baseStatus()
	return s
}

// Hub is where the cluster's stage events are published: subscribe to it
// before Start to miss none, and emit to it what other readers fold (the
// cluster's own spans).
func (s *Source) Hub() *trace.Hub { return s.hub }

// TeeRows returns a feed that also gets every row the UI gets, for a
// recording or the headless printer.
func (s *Source) TeeRows(ctx context.Context) *rows.Feed { return s.rows.Tee(ctx) }

// Start watches the cluster: its pods and their owners for the lanes (and
// the audit log when configured), the nodes for the header, the Events for
// the events pane, and the rows of the lanes' objects.
func (s *Source) Start(ctx context.Context) error {
	w, err := attach.New(attach.Config{Client: s.cfg.Client, Namespace: s.cfg.Namespace, Target: s.cfg.Target, Emitter: s.hub})
	if err != nil {
		return err
	}
	if err := w.Start(ctx); err != nil {
		if se := (*attach.ServerError)(nil); errors.As(err, &se) {
			return err // kubectl's words, as kubectl prints them
		}
		return fmt.Errorf("attach to %s: %w", s.cfg.Context, err)
	}
	if s.cfg.AuditLog != "" {
		if err := w.TailAudit(ctx, s.cfg.AuditLog); err != nil {
			return err
		}
	}
	return s.watch(rows.Target(s.cfg.Target.Kind, s.cfg.Target.Name))
}

// watch starts the informers of nodes (for the header), Events (for the
// events pane) and the objects of the lanes that want picks (their rows).
func (s *Source) watch(want func(stages.Row) bool) error {
	f := informers.NewSharedInformerFactory(s.cfg.Client, 0)
	s.nodes = NewNodeCounter(f)
	opts := []informers.SharedInformerOption{}
	if s.cfg.Namespace != "" {
		opts = append(opts, informers.WithNamespace(s.cfg.Namespace))
	}
	ef := informers.NewSharedInformerFactoryWithOptions(s.cfg.Client, 0, opts...)
	if err := WatchEvents(ef, s.kube); err != nil {
		return err
	}
	if err := rows.Watch(ef, time.Now, want, s.rows.Push); err != nil {
		return err
	}
	f.Start(s.ctx.Done())
	ef.Start(s.ctx.Done())
	go RefreshEachSecond(s.ctx, &s.mu, &s.status, s.readStatus)
	return nil
}

func (s *Source) baseStatus() tui.Status {
	return tui.Status{ReadOnly: "read-only: attached to cluster " + s.cfg.Context, Resolution: attach.Resolution,
		Unobservable: attach.Unobservable(s.cfg.AuditLog != "")}
}

// readStatus is the header's facts: the nodes, once the informers synced.
func (s *Source) readStatus() tui.Status {
	st := s.baseStatus()
	s.nodes.Count(&st)
	return st
}

func (s *Source) readOnly() error { return errors.New(s.baseStatus().ReadOnly) }

// Name says which cluster: "cluster CONTEXT".
func (s *Source) Name() string { return "cluster " + s.cfg.Context }

// Events delivers the stage events rebuilt from the cluster.
func (s *Source) Events() <-chan stages.Event { return s.sub.C() }

// KubeEvents delivers the cluster's Kubernetes Events.
func (s *Source) KubeEvents() <-chan tui.K8sEvent { return s.kube }

// Rows delivers the lanes' objects as kubectl prints them.
func (s *Source) Rows() <-chan stages.Row { return s.rows.C() }

// Workloads offers none: a real cluster is not podtrace's to apply to.
func (s *Source) Workloads() []tui.Workload { return nil }

// Apply is refused: attach is read-only.
func (s *Source) Apply([]byte) error { return s.readOnly() }

// DeletePod is refused: attach is read-only.
func (s *Source) DeletePod(string, string) error { return s.readOnly() }

// Scale is refused: attach is read-only.
func (s *Source) Scale(string, string, string, int) error { return s.readOnly() }

// Faults is nil: a real cluster's stages cannot be broken from here.
func (s *Source) Faults() tui.FaultControl { return nil }

// Clock is nil: a real cluster runs on real time.
func (s *Source) Clock() tui.ClockControl { return nil }

// Status returns the header's facts.
func (s *Source) Status() tui.Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

// PodDetail reads the pod and its Events from the cluster.
func (s *Source) PodDetail(namespace, name string) (tui.PodDetail, error) {
	return PodDetail(s.ctx, s.cfg.Client, namespace, name)
}
