package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podtrace/podtrace/engine/attach"
	"github.com/podtrace/podtrace/engine/logs"
	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
	"github.com/podtrace/podtrace/tui"
	"github.com/podtrace/podtrace/version"
)

// attachCmd opens the UI on a real cluster: `podtrace attach [pod/NAME|deploy/NAME]`.
func attachCmd(ctx context.Context, args []string) error {
	fs := newFlagSet("attach")
	kf := kubeFlags{}
	kf.register(fs)
	ns := fs.String("n", "", "namespace (default: the context's, else default)")
	fs.StringVar(ns, "namespace", "", "namespace (default: the context's, else default)")
	all := fs.Bool("A", false, "every namespace")
	fs.BoolVar(all, "all-namespaces", false, "every namespace")
	recordTo := fs.String("record", "", "also write every stage event to `FILE` as JSON lines (podtrace replay reads it)")
	audit := fs.String("audit-log", "", "read authn, authz and admission per request from the API server's audit log `FILE` (JSON lines)")
	headless := fs.Bool("headless", false, "print stage events as JSON lines on stdout instead of opening the UI")
	theme := fs.String("theme", "", "UI theme: dark, light, high-contrast, colorblind")
	targetArg, rest := splitPositional(args)
	if err := parse(fs, rest); err != nil {
		return err
	}
	var target attach.Target
	if targetArg != "" {
		var err error
		if target, err = attach.ParseTarget(targetArg); err != nil {
			return err
		}
	}
	if *all && *ns != "" {
		return errors.New("-A and -n exclude each other")
	}
	if *all && target.Kind != "" {
		return errors.New("a pod/ or deploy/ target needs one namespace, not -A")
	}
	cfg, contextName, defaultNS, err := kf.load()
	if err != nil {
		return err
	}
	if !*all && *ns == "" {
		*ns = defaultNS
	}
	if *all {
		*ns = ""
	}
	// client-go and klog must not write on the terminal the UI owns.
	logs.To(discard{})
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hub := trace.NewHub()
	src := newAttachSource(ctx, client, contextName, *ns, *audit != "", hub)
	var stopRecord func()
	if *recordTo != "" {
		if stopRecord, err = record(hub, *recordTo); err != nil {
			return err
		}
		defer stopRecord()
	}
	var printed *trace.Subscription
	done := make(chan struct{})
	if *headless {
		printed = hub.Subscribe()
		go func() { defer close(done); writeEvents(os.Stdout, printed) }()
	}
	w, err := attach.New(attach.Config{Client: client, Namespace: *ns, Target: target, Emitter: hub})
	if err != nil {
		return err
	}
	if err := w.Start(ctx); err != nil {
		return fmt.Errorf("attach to %s: %w", contextName, err)
	}
	if *audit != "" {
		if err := w.TailAudit(ctx, *audit); err != nil {
			return err
		}
	}
	if err := src.start(); err != nil {
		return err
	}
	if *headless {
		<-ctx.Done()
		flush(printed)
		printed.Close()
		<-done
		return nil
	}
	return tui.Run(ctx, src, tui.Options{Theme: *theme, NoColor: os.Getenv("NO_COLOR") != ""})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// kubeFlags are the flags that pick a cluster from a kubeconfig.
type kubeFlags struct {
	kubeconfig, context string
}

func (k *kubeFlags) register(fs interface {
	StringVar(p *string, name, value, usage string)
}) {
	fs.StringVar(&k.kubeconfig, "kubeconfig", "", "kubeconfig `FILE` (default: $KUBECONFIG, else ~/.kube/config)")
	fs.StringVar(&k.context, "context", "", "kubeconfig `CONTEXT` (default: the current context)")
}

// load reads the kubeconfig as kubectl does and returns the client config,
// the context's name and its namespace; errors are one line.
func (k *kubeFlags) load() (*rest.Config, string, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if k.kubeconfig != "" {
		if _, err := os.Stat(k.kubeconfig); err != nil {
			return nil, "", "", fmt.Errorf("kubeconfig %s: %w", k.kubeconfig, errors.Unwrap(err))
		}
		rules.ExplicitPath = k.kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: k.context})
	raw, err := cc.RawConfig()
	if err != nil {
		return nil, "", "", fmt.Errorf("kubeconfig: %s", oneLine(err))
	}
	name := k.context
	if name == "" {
		name = raw.CurrentContext
	}
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", "", fmt.Errorf("kubeconfig: %s", oneLine(err))
	}
	ns, _, err := cc.Namespace()
	if err != nil || ns == "" {
		ns = "default"
	}
	if name == "" {
		name = cfg.Host
	}
	cfg.UserAgent = "podtrace/" + version.Kubernetes + " (attach)"
	cfg.Timeout = 30 * time.Second
	return cfg, name, ns, nil
}

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
	nodes   listersv1.NodeLister
	synced  cache.InformerSynced

	mu     sync.Mutex
	status tui.Status
}

func newAttachSource(ctx context.Context, c kubernetes.Interface, contextName, ns string, audit bool, hub *trace.Hub) *attachSource {
	s := &attachSource{ctx: ctx, client: c, context: contextName, ns: ns, audit: audit, sub: hub.Subscribe(),
		kube: make(chan tui.K8sEvent, kubeEventBuffer)}
	s.status = s.baseStatus()
	return s
}

// start watches nodes (for the header) and Events (for the events pane).
func (s *attachSource) start() error {
	f := informers.NewSharedInformerFactory(s.client, 0)
	nodeInf := f.Core().V1().Nodes()
	s.nodes, s.synced = nodeInf.Lister(), nodeInf.Informer().HasSynced
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
	f.Start(s.ctx.Done())
	ef.Start(s.ctx.Done())
	go s.watchStatus()
	return nil
}

func (s *attachSource) baseStatus() tui.Status {
	return tui.Status{ReadOnly: "read-only: attached to cluster " + s.context, Resolution: attach.Resolution,
		Unobservable: attach.Unobservable(s.audit)}
}

func (s *attachSource) watchStatus() {
	for {
		st := s.baseStatus()
		if s.synced() {
			list, _ := s.nodes.List(labels.Everything())
			st.NodesTotal = len(list)
			for _, n := range list {
				for _, c := range n.Status.Conditions {
					if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
						st.NodesReady++
					}
				}
			}
		}
		s.mu.Lock()
		s.status = st
		s.mu.Unlock()
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func (s *attachSource) readOnly() error { return errors.New(s.baseStatus().ReadOnly) }

// Name says which cluster: "cluster CONTEXT".
func (s *attachSource) Name() string                            { return "cluster " + s.context }
func (s *attachSource) Events() <-chan stages.Event             { return s.sub.C() }
func (s *attachSource) KubeEvents() <-chan tui.K8sEvent         { return s.kube }
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
	return podDetail(s.ctx, s.client, namespace, name, func(evs []corev1.Event) []tui.K8sEvent {
		items := make([]tui.K8sEvent, 0, len(evs))
		for i := range evs {
			items = append(items, kubeEvent(&evs[i]))
		}
		sort.SliceStable(items, func(i, j int) bool { return items[i].LastSeen.Before(items[j].LastSeen) })
		return items
	})
}
