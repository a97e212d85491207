package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/spf13/cobra"

	"github.com/podtrace/podtrace/engine/attach"
	"github.com/podtrace/podtrace/engine/attach/spans"
	"github.com/podtrace/podtrace/engine/logs"
	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/source/rows"
	"github.com/podtrace/podtrace/stages"
	"github.com/podtrace/podtrace/tui"
	"github.com/podtrace/podtrace/version"
)

// newAttachCmd builds `podtrace attach [pod/NAME|deploy/NAME]`: the UI
// on a real cluster, read-only, with kubectl's own connection flags.
func newAttachCmd() *cobra.Command {
	var (
		all      bool
		recordTo string
		audit    string
		headless bool
		theme    string
		otlp     string
		printCfg bool
	)
	c := &cobra.Command{
		Use:   "attach [pod/NAME|deploy/NAME] [flags]",
		Short: "The same lanes, read-only, rebuilt from a real cluster's objects and Events",
		Long: `Attach to a real cluster, picked from a kubeconfig with kubectl's own flags,
and draw the lanes of its pods (all of a namespace, every namespace with -A, or
one pod or Deployment), read-only, from its objects and Events (one-second
resolution). --record keeps the stream for podtrace replay. With --otlp-listen,
the cluster's own OpenTelemetry spans (kube-apiserver, kubelet, containerd 2.x)
give the stages they cover millisecond start and end; --print-tracing-config
prints what to set on the cluster for that (docs/tracing.md).`,
		Example: `  podtrace attach --context prod -n shop
  podtrace attach -n shop --otlp-listen 127.0.0.1:4317
  podtrace attach --print-tracing-config --otlp-listen 10.0.0.5:4317
  podtrace attach deploy/web -n shop --record web.jsonl
  podtrace attach -A --headless`,
		Args: cobra.MaximumNArgs(1),
	}
	kube := connectionFlags(c.Flags(), true)
	c.Flags().BoolVarP(&all, "all-namespaces", "A", false, "every namespace")
	c.Flags().StringVar(&recordTo, "record", "", "also write every stage event to `FILE` as JSON lines (podtrace replay reads it)")
	c.Flags().StringVar(&audit, "audit-log", "", "read authn, authz and admission per request from the API server's audit log `FILE` (JSON lines)")
	c.Flags().BoolVar(&headless, "headless", false, "print stage events as JSON lines on stdout instead of opening the UI")
	c.Flags().StringVar(&theme, "theme", "", "UI theme: dark, light, high-contrast, colorblind")
	c.Flags().StringVar(&otlp, "otlp-listen", "", "receive the cluster's own spans over OTLP/gRPC on `HOST:PORT` (e.g. 127.0.0.1:4317) and fold them into the lanes")
	c.Flags().BoolVar(&printCfg, "print-tracing-config", false, "print the kube-apiserver, kubelet and containerd settings that send a 1.36 cluster's spans to --otlp-listen's address, and exit")
	c.RunE = func(c *cobra.Command, args []string) error {
		if printCfg {
			return printTracingConfig(c.OutOrStdout(), otlp)
		}
		var target attach.Target
		if len(args) == 1 {
			var err error
			if target, err = attach.ParseTarget(args[0]); err != nil {
				return err
			}
		}
		if all && *kube.Namespace != "" {
			return errors.New("-A and -n exclude each other")
		}
		if all && target.Kind != "" {
			return errors.New("a pod/ or deploy/ target needs one namespace, not -A")
		}
		cfg, contextName, ns, err := restConfig(kube, "podtrace/"+version.Kubernetes+" (attach)")
		if err != nil {
			return err
		}
		if all {
			ns = ""
		}
		return attachRun(c.Context(), cfg, contextName, ns, target, attachOptions{record: recordTo, audit: audit,
			headless: headless, theme: theme, otlpListen: otlp})
	}
	return c
}

// attachOptions are attach's flags past the cluster, namespace and target.
type attachOptions struct {
	record, audit, theme string
	headless             bool
	// otlpListen is where to receive the cluster's spans; empty for none.
	otlpListen string
}

// attachRun watches the cluster of cfg and shows its lanes until ctx ends.
func attachRun(ctx context.Context, cfg *rest.Config, contextName, ns string, target attach.Target, o attachOptions) error {
	// client-go and klog must not write on the terminal the UI owns.
	logs.To(discard{})
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hub := trace.NewHub()
	src := newAttachSource(ctx, client, contextName, ns, o.audit != "", hub)
	stopExport, err := exportTraces(hub)
	if err != nil {
		return err
	}
	defer stopExport()
	if o.otlpListen != "" {
		r, err := spans.Listen(ctx, o.otlpListen, hub)
		if err != nil {
			return err
		}
		defer r.Stop()
	}
	if o.record != "" {
		stopRecord, err := record(hub, src.rows.Tee(ctx), o.record)
		if err != nil {
			return err
		}
		defer stopRecord()
	}
	var printed *trace.Subscription
	done := make(chan struct{})
	if o.headless {
		printed = hub.Subscribe()
		printedRows := src.rows.Tee(ctx)
		go func() { defer close(done); writeEvents(os.Stdout, printed, printedRows) }()
	}
	w, err := attach.New(attach.Config{Client: client, Namespace: ns, Target: target, Emitter: hub})
	if err != nil {
		return err
	}
	if err := w.Start(ctx); err != nil {
		if se := (*attach.ServerError)(nil); errors.As(err, &se) {
			return err // kubectl's words, as kubectl prints them
		}
		return fmt.Errorf("attach to %s: %w", contextName, err)
	}
	if o.audit != "" {
		if err := w.TailAudit(ctx, o.audit); err != nil {
			return err
		}
	}
	if err := src.start(rows.Target(target.Kind, target.Name)); err != nil {
		return err
	}
	if o.headless {
		<-ctx.Done()
		flush(printed)
		printed.Close()
		<-done
		return nil
	}
	return tui.Run(ctx, src, tui.Options{Theme: o.theme, NoColor: os.Getenv("NO_COLOR") != ""})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// oneLine is err's first line.
func oneLine(err error) string {
	s := strings.TrimSpace(err.Error())
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// attachSource shows a real cluster in the UI, read-only.
type attachSource struct {
	ctx     context.Context
	client  kubernetes.Interface
	context string
	ns      string
	audit   bool
	sub     *trace.Subscription
	kube    chan tui.K8sEvent
	nodes   nodeCounter
	rows    *rows.Feed

	mu     sync.Mutex
	status tui.Status
}

func newAttachSource(ctx context.Context, c kubernetes.Interface, contextName, ns string, audit bool, hub *trace.Hub) *attachSource {
	s := &attachSource{ctx: ctx, client: c, context: contextName, ns: ns, audit: audit, sub: hub.Subscribe(),
		kube: make(chan tui.K8sEvent, kubeEventBuffer), rows: rows.NewFeed(ctx)}
	s.status = s.baseStatus()
	return s
}

// start watches nodes (for the header), Events (for the events pane) and
// the objects of the lanes that want picks (their rows).
func (s *attachSource) start(want func(stages.Row) bool) error {
	f := informers.NewSharedInformerFactory(s.client, 0)
	s.nodes = newNodeCounter(f)
	opts := []informers.SharedInformerOption{}
	if s.ns != "" {
		opts = append(opts, informers.WithNamespace(s.ns))
	}
	ef := informers.NewSharedInformerFactoryWithOptions(s.client, 0, opts...)
	send := func(obj any) {
		if ev, ok := obj.(*corev1.Event); ok {
			select {
			case s.kube <- kubeEvent(ev):
			default:
			}
		}
	}
	if _, err := ef.Core().V1().Events().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: send,
		UpdateFunc: func(_, obj any) { send(obj) }}); err != nil {
		return fmt.Errorf("watch events: %w", err)
	}
	if err := rows.Watch(ef, time.Now, want, s.rows.Push); err != nil {
		return err
	}
	f.Start(s.ctx.Done())
	ef.Start(s.ctx.Done())
	go refreshEachSecond(s.ctx, &s.mu, &s.status, s.readStatus)
	return nil
}

func (s *attachSource) baseStatus() tui.Status {
	return tui.Status{ReadOnly: "read-only: attached to cluster " + s.context, Resolution: attach.Resolution,
		Unobservable: attach.Unobservable(s.audit)}
}

// readStatus is the header's facts: the nodes, once the informers synced.
func (s *attachSource) readStatus() tui.Status {
	st := s.baseStatus()
	s.nodes.count(&st)
	return st
}

func (s *attachSource) readOnly() error { return errors.New(s.baseStatus().ReadOnly) }

// Name says which cluster: "cluster CONTEXT".
func (s *attachSource) Name() string                            { return "cluster " + s.context }
func (s *attachSource) Events() <-chan stages.Event             { return s.sub.C() }
func (s *attachSource) KubeEvents() <-chan tui.K8sEvent         { return s.kube }
func (s *attachSource) Rows() <-chan stages.Row                 { return s.rows.C() }
func (s *attachSource) Workloads() []tui.Workload               { return nil }
func (s *attachSource) Apply([]byte) error                      { return s.readOnly() }
func (s *attachSource) DeletePod(string, string) error          { return s.readOnly() }
func (s *attachSource) Scale(string, string, string, int) error { return s.readOnly() }
func (s *attachSource) Faults() tui.FaultControl                { return nil }
func (s *attachSource) Clock() tui.ClockControl                 { return nil }

func (s *attachSource) Status() tui.Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

// PodDetail reads the pod and its Events from the cluster.
func (s *attachSource) PodDetail(namespace, name string) (tui.PodDetail, error) {
	return podDetail(s.ctx, s.client, namespace, name)
}
