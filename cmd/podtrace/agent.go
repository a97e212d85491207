package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/agent"
	"github.com/podtrace/podtrace/engine/clock"
	"github.com/podtrace/podtrace/engine/kubelet/nodes"
	"github.com/podtrace/podtrace/engine/logs"
	"github.com/podtrace/podtrace/engine/trace"
)

// agentCmd runs podtrace nodes against any API server until interrupted:
// `podtrace agent --kubeconfig K --nodes N`.
func agentCmd(ctx context.Context, args []string) error {
	fs := newFlagSet("agent")
	var kf kubeFlags
	kf.register(fs)
	nodeArg := fs.String("nodes", "1", "number of nodes, or a nodes YAML `FILE`")
	prefix := fs.String("name-prefix", "", "prefix of the node names with --nodes N (node-1 … become PREFIXnode-1 …)")
	seed := fs.Int64("seed", 1, "seed for the simulated runtime")
	runtimeName := fs.String("runtime", "sim", "container runtime: sim (simulated) or containerd (real containers, root, Linux)")
	containerdAddr := fs.String("containerd-address", "", "with --runtime containerd: use the containerd at this `SOCKET` instead of starting one")
	dataDir := fs.String("data-dir", "", "`DIR` for the log (podtrace.log) and containerd state (default: a temporary directory)")
	events := fs.Bool("events", false, "print the nodes' stage events as JSON lines on stdout")
	if err := parse(fs, args); err != nil {
		return err
	}
	specs, err := agentNodes(*nodeArg, *prefix)
	if err != nil {
		return err
	}
	cfg, contextName, _, err := kf.load()
	if err != nil {
		return err
	}
	dir := *dataDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "podtrace-agent-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	closeLog, err := logs.ToFile(filepath.Join(dir, "podtrace.log"))
	if err != nil {
		return err
	}
	defer closeLog()
	// The containerd hooks are the engine's; the agent takes them over.
	cf := clusterFlags{runtime: *runtimeName, containerd: *containerdAddr}
	var hooks engine.Config
	closeHost, err := cf.realRuntime(ctx, dir, specs, &hooks)
	if err != nil {
		return err
	}
	defer closeHost()
	hub := trace.NewHub()
	var sub *trace.Subscription
	done := make(chan struct{})
	if *events {
		sub = hub.Subscribe()
		go func() { defer close(done); writeEvents(os.Stdout, sub) }()
	}
	a, err := agent.New(agent.Config{RestConfig: cfg, Nodes: specs, Clock: clock.New(time.Now(), 1), Hub: hub, Seed: *seed,
		NewRuntime: hooks.NewRuntime, NewNetwork: hooks.NewNetwork, RuntimeName: hooks.RuntimeName})
	if err != nil {
		return err
	}
	if err := a.Start(ctx); err != nil {
		return fmt.Errorf("agent for %s: %w", contextName, err)
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	err = a.WaitReady(wctx)
	cancel()
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("agent for %s: %w", contextName, err)
	}
	if ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "podtrace agent: %d node(s) Ready in %s (%s … %s); logs in %s\n", len(specs), contextName,
			specs[0].Name, specs[len(specs)-1].Name, filepath.Join(dir, "podtrace.log"))
	}
	<-ctx.Done()
	if sub != nil {
		flush(sub)
		sub.Close()
		<-done
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
