// Package enginetest starts a real control plane (embedded etcd and the API
// server on loopback HTTPS) for tests, and collects the stage events it emits.
package enginetest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/podtrace/podtrace/engine/controlplane"
	"github.com/podtrace/podtrace/engine/identity"
	"github.com/podtrace/podtrace/engine/podnet"
	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/internal/testflags"
	"github.com/podtrace/podtrace/internal/testproc"
	"github.com/podtrace/podtrace/internal/waittest"
	"github.com/podtrace/podtrace/stages"
)

// Main runs a test package's tests in a pod network namespace
// (engine/podnet) where one can be made, as podtrace itself runs the real
// kubelet: simulated pods then answer on their pod IPs and Services get
// endpoints. Elsewhere the tests run where they are. Call it from
// TestMain with its *testing.M, or anything else whose Run runs the tests.
func Main(m interface{ Run() int }) {
	if !podnet.Inside() {
		if code, err := podnet.Reexec(""); err == nil {
			os.Exit(code)
		}
	} else if err := podnet.Setup(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// MainOwnProcesses is Main for a package whose tests that start a
// cluster each run in a process of their own (testproc.OwnProcess): it
// lets testproc.ProcessesAtOnce tests run at once unless -test.parallel
// says otherwise.
func MainOwnProcesses(m interface{ Run() int }) {
	testflags.DefaultParallel(testproc.ProcessesAtOnce)
	Main(m)
}

// Env is a running control plane for one test.
type Env struct {
	*controlplane.ControlPlane
	Tracer *trace.Tracer
	Hub    *trace.Hub
	Ctx    context.Context

	recording *trace.Recording
}

// Options tune the environment.
type Options struct {
	// DataDir keeps state (default: a fresh temporary directory).
	DataDir string
	// Fsync keeps etcd's fsync on (default off, for speed).
	Fsync bool
	// NoRecording skips keeping every stage event for Events, so that a
	// benchmark measures the engine rather than the test's memory of it.
	NoRecording bool
}

// Start starts etcd and the API server and stops them when the test ends.
func Start(t testing.TB, opts ...Options) *Env {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.DataDir == "" {
		o.DataDir = t.TempDir()
	}
	ctx, cancel := context.WithCancel(context.Background())
	env := &Env{Hub: trace.NewHub(), Ctx: ctx}
	env.Tracer = trace.New(clock.RealClock{}, env.Hub)
	if !o.NoRecording {
		env.recording = env.Hub.Record()
	}
	cp, err := controlplane.Start(ctx, controlplane.Config{DataDir: o.DataDir, UnsafeNoFsync: !o.Fsync,
		Tracer: env.Tracer})
	if err != nil {
		cancel()
		t.Fatalf("start control plane: %v", err)
	}
	env.ControlPlane = cp
	t.Cleanup(func() {
		cancel()
		if env.recording != nil {
			env.recording.Stop()
		}
		cp.Close()
	})
	return env
}

// Admin returns a client with the kubernetes-admin client certificate.
func (e *Env) Admin() kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(e.AdminConfig())
}

// RestConfigFor returns a bearer-token config for user in groups.
func (e *Env) RestConfigFor(t testing.TB, user string, groups ...string) *rest.Config {
	t.Helper()
	cfg, err := e.ControlPlane.RestConfig(identity.User{Name: user, Groups: groups}, "enginetest")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// ClientFor returns a clientset acting as user in groups.
func (e *Env) ClientFor(t testing.TB, user string, groups ...string) kubernetes.Interface {
	t.Helper()
	return kubernetes.NewForConfigOrDie(e.RestConfigFor(t, user, groups...))
}

// Events returns the stage events emitted so far (none with NoRecording).
func (e *Env) Events() []stages.Event {
	if e.recording == nil {
		return nil
	}
	return e.recording.Events()
}

// WaitFor polls cond until it holds or the timeout passes.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	waittest.EventuallyEvery(t, what, 20*time.Millisecond, timeout, func() (bool, string) { return cond(), "" })
}
