package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/podtrace/podtrace/engine/agent"
	"github.com/podtrace/podtrace/engine/cri/runtimes"
	"github.com/podtrace/podtrace/engine/nodes"
	"github.com/podtrace/podtrace/source/stream"
	"github.com/podtrace/podtrace/version"
)

// newAgentCmd builds `podtrace agent`: podtrace nodes for any API server,
// until interrupted.
func newAgentCmd() *cobra.Command {
	var o agentOptions
	c := &cobra.Command{
		Use:   "agent [flags]",
		Short: "podtrace's node agents join any Kubernetes API server as nodes",
		Long: `Join the API server a kubeconfig names with podtrace's node agents: each is a
node running the pods bound to it on the simulated runtime (or containerd), and
reporting their stages. Each node is the real kubelet ` + version.Kubernetes + ` behind podtrace's
CRI interposer.`,
		Example: `  podtrace agent --kubeconfig admin.conf --nodes 3 --name-prefix pt-
  podtrace agent --context kind-kind --nodes nodes.yaml --events`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error { return agentRun(c.Context(), o) },
	}
	o.kube = connectionFlags(c.Flags(), false)
	fs := c.Flags()
	fs.StringVar(&o.nodes, "nodes", "1", "number of nodes `N`, or a nodes YAML file")
	fs.StringVar(&o.prefix, "name-prefix", "", "prefix of the node names with --nodes N (node-1 … become PREFIXnode-1 …)")
	fs.Int64Var(&o.seed, "seed", 1, "seed for the simulated runtime")
	fs.StringVar(&o.runtime, "runtime", runtimes.All[0].Name, runtimeUsage())
	fs.StringVar(&o.mirror, "registry-mirror", "", "with --runtime "+realRuntimes()+": pull every image from the registry at `URL` instead of its own registry")
	fs.StringVar(&o.dataDir, "data-dir", "", "`DIR` for the log (podtrace.log) and containerd state (default: a temporary directory)")
	fs.BoolVar(&o.events, "events", false, "print the nodes' stage events as JSON lines on stdout")
	fs.StringSliceVar(&o.clusterDNS, "cluster-dns", nil, "the cluster's DNS Service `IP`s, given to pods as their nameservers (the kubelets' clusterDNS; default none: pods keep the host's resolvers)")
	return c
}

// agentOptions are the agent's flags.
type agentOptions struct {
	kube                            *genericclioptions.ConfigFlags
	nodes, prefix, runtime, dataDir string
	mirror                          string
	clusterDNS                      []string
	seed                            int64
	events                          bool
}

// agentRun starts the agents and runs them until ctx ends.
func agentRun(ctx context.Context, o agentOptions) error {
	specs, err := agentNodes(o.nodes, o.prefix)
	if err != nil {
		return err
	}
	for _, ip := range o.clusterDNS {
		if net.ParseIP(ip) == nil {
			return fmt.Errorf("--cluster-dns %q: want IP addresses", ip)
		}
	}
	// --runtime and --registry-mirror mean what they mean to the engine.
	cf := clusterFlags{runtime: o.runtime, mirror: o.mirror}
	cfg, contextName, _, err := restConfig(o.kube, agent.UserAgent)
	if err != nil {
		return err
	}
	dir := o.dataDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "podtrace-agent-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	closeLog, err := logToFile(filepath.Join(dir, "podtrace.log"))
	if err != nil {
		return err
	}
	defer closeLog()
	host, closeHost, err := cf.startRuntime(ctx, dir)
	if err != nil {
		return err
	}
	defer closeHost()
	a, err := agent.New(agent.Config{RestConfig: cfg, Nodes: specs, Seed: o.seed,
		Runtime: host, DataDir: dir, ClusterDNS: o.clusterDNS})
	if err != nil {
		return err
	}
	var printed *stream.Printer
	if o.events {
		printed = stream.Print(os.Stdout, a.Hub(), nil)
	}
	if err := a.Start(ctx); err != nil {
		return fmt.Errorf("agent for %s: %w", contextName, err)
	}
	defer a.Nodes.Shutdown(context.WithoutCancel(ctx)) // stops the runtimes, unmounts the kubelets' volumes
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	err = a.WaitReady(wctx)
	cancel()
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("agent for %s: %w", contextName, err)
	}
	if ctx.Err() == nil {
		fmt.Fprintf(terminal, "podtrace agent: %d node(s) Ready in %s (%s … %s); logs in %s\n", len(specs), contextName,
			specs[0].Name, specs[len(specs)-1].Name, filepath.Join(dir, "podtrace.log"))
	}
	<-ctx.Done()
	if printed != nil {
		printed.Stop()
	}
	return nil
}

// agentNodes reads --nodes (a count or a YAML file) and applies the prefix.
func agentNodes(arg, prefix string) ([]nodes.Spec, error) {
	if n, err := strconv.Atoi(arg); err == nil {
		if n < 1 || n > 5000 {
			return nil, fmt.Errorf("--nodes %d: want 1 to 5000 nodes", n)
		}
		specs := nodes.Defaults(n)
		for i := range specs {
			specs[i].Name = prefix + specs[i].Name
		}
		return specs, nil
	}
	if prefix != "" {
		return nil, fmt.Errorf("--name-prefix applies to --nodes N; a nodes file names its nodes")
	}
	return nodes.Load(arg)
}
