package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/cri"
	"github.com/podtrace/podtrace/engine/cri/runtimes"
	"github.com/podtrace/podtrace/engine/etcd"
	"github.com/podtrace/podtrace/engine/logs"
	"github.com/podtrace/podtrace/engine/nodes"
	"github.com/podtrace/podtrace/engine/podnet"
	"github.com/podtrace/podtrace/stages"
)

// clusterFlags are the flags every command that starts the engine shares.
type clusterFlags struct {
	dataDir       string
	etcdEndpoints string
	etcdTLS       etcd.TLSFiles
	nodes         string
	speed         float64
	seed          int64
	faults        faultList
	runtime       string
	mirror        string
	e2eImages     bool
	maxRestart    time.Duration
}

// faultList is --fault, repeatable.
type faultList []stages.Fault

func (f *faultList) String() string {
	if len(*f) == 0 {
		return "" // no default shown in --help
	}
	return fmt.Sprint(*f)
}

// Type names the value in --help.
func (f *faultList) Type() string { return "STAGE:KIND[:ARG][@SCOPE]" }

func (f *faultList) Set(s string) error {
	fault, err := stages.ParseFault(s)
	if err == nil {
		fault, err = stages.ResolveVariant(fault) // pull:fail:slow is a delay; unknown variants are errors
	}
	if err != nil {
		return err
	}
	*f = append(*f, fault)
	return nil
}

func (c *clusterFlags) register(fs *pflag.FlagSet, defaultNodes int) {
	fs.StringVar(&c.dataDir, "data-dir", "", "keep the cluster in `DIR` across restarts (default: a temporary directory)")
	fs.StringVar(&c.etcdEndpoints, "etcd-endpoints", "", "use an external etcd at these comma-separated `URLs`")
	fs.StringVar(&c.etcdTLS.CAFile, "etcd-cafile", "", "verify the external etcd's certificate with this CA `FILE`")
	fs.StringVar(&c.etcdTLS.CertFile, "etcd-certfile", "", "client certificate `FILE` for the external etcd")
	fs.StringVar(&c.etcdTLS.KeyFile, "etcd-keyfile", "", "client key `FILE` for the external etcd")
	fs.StringVar(&c.nodes, "nodes", strconv.Itoa(defaultNodes), "number of nodes `N`, or a nodes YAML file")
	fs.Float64Var(&c.speed, "speed", 1, "the simulated runtime's speed: its latencies divided by it (2 = twice as fast)")
	fs.Int64Var(&c.seed, "seed", 1, "seed for the simulated runtime and scheduler tie-breaks")
	fs.Var(&c.faults, "fault", "inject a fault, e.g. pull:fail@pod/default/web (repeatable)")
	fs.StringVar(&c.runtime, "runtime", runtimes.All[0].Name, runtimeUsage())
	fs.DurationVar(&c.maxRestart, "max-container-restart-period", 0, "cap the real kubelet's crash-loop back-off at `DURATION` (its crashLoopBackOff.maxContainerRestartPeriod; default 5m)")
	fs.StringVar(&c.mirror, "registry-mirror", "", "with --runtime "+realRuntimes()+": pull every image from the registry at `URL` (e.g. http://127.0.0.1:5000) instead of its own registry")
	fs.BoolVar(&c.e2eImages, "e2e-images", false, "with --runtime "+realRuntimes()+": build the conformance suite's images (agnhost, sample-apiserver and etcd from source, a few stand-ins; minutes the first time) and serve them under their registry.k8s.io names")
}

// checkMaxRestart checks --max-container-restart-period as the kubelet's
// configuration validation would.
func (c *clusterFlags) checkMaxRestart() error {
	if c.maxRestart < 0 || (c.maxRestart > 0 && c.maxRestart < time.Second) {
		return fmt.Errorf("--max-container-restart-period %s: want at least 1s", c.maxRestart)
	}
	return nil
}

// nodeSpecs reads --nodes: a count or a YAML file.
func (c *clusterFlags) nodeSpecs() ([]nodes.Spec, error) {
	if n, err := strconv.Atoi(c.nodes); err == nil {
		if n < 1 || n > 5000 {
			return nil, fmt.Errorf("--nodes %d: want 1 to 5000 nodes", n)
		}
		return nodes.Defaults(n), nil
	}
	return nodes.Load(c.nodes)
}

// start starts the engine, with library logs in DATA_DIR/podtrace.log. The
// returned cleanup stops it and removes a temporary data dir.
func (c *clusterFlags) start(ctx context.Context) (*engine.Engine, func(), error) {
	specs, err := c.nodeSpecs()
	if err != nil {
		return nil, nil, err
	}
	return c.startNodes(ctx, specs)
}

// startNodes is start on the given nodes (a scenario brings its own).
// When a step fails, what the steps before it started is undone, last
// first.
func (c *clusterFlags) startNodes(ctx context.Context, specs []nodes.Spec) (_ *engine.Engine, _ func(), err error) {
	var undo []func()
	cleanup := func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	defer func() {
		if err != nil {
			cleanup()
		}
	}()
	dir := c.dataDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "podtrace-"); err != nil {
			return nil, nil, err
		}
		undo = append(undo, func() { os.RemoveAll(dir) })
	}
	closeLog, err := logToFile(filepath.Join(dir, "podtrace.log"))
	if err != nil {
		return nil, nil, err
	}
	undo = append(undo, func() { closeLog() })
	if err = c.checkMaxRestart(); err != nil {
		return nil, nil, err
	}
	hostLn, apiLn, err := podnetListeners()
	if err != nil {
		return nil, nil, err
	}
	var endpoints []string
	if c.etcdEndpoints != "" {
		endpoints = strings.Split(c.etcdEndpoints, ",")
	}
	cfg := engine.Config{DataDir: dir, EtcdEndpoints: endpoints, EtcdTLS: c.etcdTLS, Nodes: specs, Speed: c.speed, Seed: c.seed,
		MaxContainerRestartPeriod: c.maxRestart}
	// The forwarder closes hostLn when forwardCtx ends, and on failure
	// before it runs the cancel closes it too.
	forwardCtx, stopForward := context.WithCancel(ctx)
	undo = append(undo, stopForward)
	if hostLn != nil {
		cfg.APIListener = apiLn // the same address inside, forwarded below
		context.AfterFunc(forwardCtx, func() { hostLn.Close() })
		undo = append(undo, func() { apiLn.Close() })
	}
	var closeHost func()
	if cfg.Runtime, closeHost, err = c.startRuntime(ctx, dir); err != nil {
		return nil, nil, err
	}
	undo = append(undo, closeHost)
	e, err := engine.Start(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	undo = append(undo, func() { e.Close() })
	if e.NoClusterDNS != nil {
		fmt.Fprintf(terminal, "podtrace: %v\n", e.NoClusterDNS) // logged too
	}
	if e.NoServiceProxy != nil {
		fmt.Fprintf(terminal, "podtrace: %v\n", e.NoServiceProxy) // logged too
	}
	for _, f := range c.faults {
		e.Tracer.Faults.Add(f)
	}
	if hostLn != nil {
		go podnet.Forward(forwardCtx, hostLn, apiLn.Addr().String()) // kubectl on the host reaches the API server inside
	}
	return e, cleanup, nil
}

// startRuntime starts the runtime --runtime names (engine/cri/runtimes),
// checking first that --registry-mirror and --e2e-images apply to it. It
// returns the runtime and a func that closes it (removing every pod, with
// real containers) after the engine.
func (c *clusterFlags) startRuntime(ctx context.Context, dir string) (*cri.Host, func(), error) {
	rt, ok := runtimes.Lookup(c.runtime)
	if !ok {
		return nil, nil, fmt.Errorf("--runtime %q: want %s", c.runtime, orList(runtimeNames(func(runtimes.Runtime) bool { return true })))
	}
	if !rt.Real && c.mirror != "" {
		return nil, nil, fmt.Errorf("--registry-mirror needs --runtime %s (%s pulls nothing)", realRuntimes(), rt.Called)
	}
	if !rt.Real && c.e2eImages {
		return nil, nil, fmt.Errorf("--e2e-images needs --runtime %s (%s runs no image's program)", realRuntimes(), rt.Called)
	}
	if c.mirror != "" {
		u, err := url.Parse(c.mirror)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, nil, fmt.Errorf("--registry-mirror %q: want an http or https URL, e.g. http://127.0.0.1:5000", c.mirror)
		}
	}
	h, err := rt.Start(ctx, runtimes.Options{Dir: dir, Mirror: c.mirror, E2EImages: c.e2eImages})
	if err != nil {
		return nil, nil, err
	}
	return h, func() { _ = h.Close(context.WithoutCancel(ctx)) }, nil
}

// runtimeUsage is --runtime's line in --help: every runtime, with what
// it is.
func runtimeUsage() string {
	var each []string
	for _, r := range runtimes.All {
		each = append(each, r.Name+" ("+r.Usage+")")
	}
	return "container runtime: " + orList(each)
}

// realRuntimes names the runtimes that run real containers, those
// --registry-mirror and --e2e-images apply to ("containerd").
func realRuntimes() string {
	return orList(runtimeNames(func(r runtimes.Runtime) bool { return r.Real }))
}

// runtimeNames names the runtimes keep keeps.
func runtimeNames(keep func(runtimes.Runtime) bool) []string {
	var names []string
	for _, r := range runtimes.All {
		if keep(r) {
			names = append(names, r.Name)
		}
	}
	return names
}

// orList joins words as a sentence offers a choice: "a", "a or b",
// "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// logToFile sends the components' and libraries' logs to path: klog and
// the standard logger (logs.ToFile), and what upstream code writes to
// os.Stderr itself (logs.StderrToFile). podtrace's own lines keep the
// terminal. closeLog undoes both.
func logToFile(path string) (closeLog func() error, err error) {
	closeKlog, err := logs.ToFile(path)
	if err != nil {
		return nil, err
	}
	restoreStderr, err := logs.StderrToFile(path)
	if err != nil {
		closeKlog()
		return nil, err
	}
	return func() error { restoreStderr(); return closeKlog() }, nil
}
