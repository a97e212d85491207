package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/spf13/cobra"

	"github.com/podtrace/podtrace/engine/attach"
	"github.com/podtrace/podtrace/engine/attach/spans"
	"github.com/podtrace/podtrace/engine/logs"
	"github.com/podtrace/podtrace/source/cluster"
	"github.com/podtrace/podtrace/source/stream"
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
	src := cluster.New(ctx, cluster.Config{Client: client, Context: contextName, Namespace: ns, Target: target, AuditLog: o.audit})
	stopExport, err := stream.Export(src.Hub())
	if err != nil {
		return err
	}
	defer stopExport()
	if o.otlpListen != "" {
		r, err := spans.Listen(ctx, o.otlpListen, src.Hub())
		if err != nil {
			return err
		}
		defer r.Stop()
	}
	if o.record != "" && !o.headless {
		stopRecord, err := stream.Record(src.Hub(), src.TeeRows(ctx), o.record)
		if err != nil {
			return err
		}
		defer stopRecord()
	}
	var printed *stream.Printer
	if o.headless {
		// One printer for the terminal and the recording, so both get the
		// same stream line for line (two would each interleave events and
		// rows in an order of their own).
		w, closeRecord, err := headlessOutput(o.record)
		if err != nil {
			return err
		}
		defer closeRecord()
		printed = stream.Print(w, src.Hub(), src.TeeRows(ctx))
	}
	if err := src.Start(ctx); err != nil {
		return err
	}
	if o.headless {
		<-ctx.Done()
		printed.Stop()
		return nil
	}
	return tui.Run(ctx, src, tui.Options{Theme: o.theme, NoColor: os.Getenv("NO_COLOR") != ""})
}

// headlessOutput is where attach --headless prints: standard output, and
// also the file record names unless it is empty; closeRecord closes that.
func headlessOutput(record string) (w io.Writer, closeRecord func(), err error) {
	if record == "" {
		return os.Stdout, func() {}, nil
	}
	f, err := os.Create(record)
	if err != nil {
		return nil, nil, fmt.Errorf("record events: %w", err)
	}
	return io.MultiWriter(os.Stdout, f), func() { f.Close() }, nil
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
