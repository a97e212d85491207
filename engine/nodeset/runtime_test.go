package nodeset

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/utils/clock"

	"github.com/podtrace/podtrace/engine/cri"
	crisim "github.com/podtrace/podtrace/engine/cri/sim"
	"github.com/podtrace/podtrace/engine/nodes"
	"github.com/podtrace/podtrace/engine/trace"
)

// TestSimRuntime builds simulated runtimes as Start does, through the
// default factory: with a Tracer each sits behind an interposer, its
// observer, that follows faults; without one the kubelet drives the
// runtime itself.
func TestSimRuntime(t *testing.T) {
	tr := trace.New(clock.RealClock{}, trace.NewHub())
	for _, tt := range []struct {
		name      string
		tracer    *trace.Tracer
		keepState bool
	}{
		{"traced", tr, false},
		{"untraced", nil, false},
		{"traced, keeping state", tr, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			dir := t.TempDir()
			s := &Set{cfg: Config{Nodes: nodes.Defaults(2), DataDir: dir, Tracer: tt.tracer, KeepState: tt.keepState}}
			rt, err := s.newRuntime(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			s.runtimes = append(s.runtimes, rt.Node)
			if rt.Runtime == nil || rt.Images == nil || rt.Close == nil || rt.Recheck == nil || rt.RealContainers {
				t.Fatalf("runtime %+v: want node-2's simulated runtime", rt)
			}
			traced := tt.tracer != nil
			if (rt.hooks != nil) != traced {
				t.Errorf("interposer %v, want %v", rt.hooks != nil, traced)
			}
			if _, direct := rt.Runtime.(*crisim.Runtime); direct == traced || traced && rt.hooks.NodeName() != "node-2" {
				t.Errorf("the kubelet drives %T (traced %v), want the interposer of node-2 with a Tracer", rt.Runtime, traced)
			}
			s.Shutdown(context.Background()) // saves a last time, with KeepState
			if got, _ := filepath.Glob(filepath.Join(dir, "runtime", "node-2.json")); (len(got) == 1) != tt.keepState {
				t.Errorf("state file %v with KeepState %v", got, tt.keepState)
			}
		})
	}
}

// TestRuntimeFactory starts each node through Config.Runtime with the
// node's settings, and the set's Tracer as each node's observer.
func TestRuntimeFactory(t *testing.T) {
	tr := trace.New(clock.RealClock{}, trace.NewHub())
	var got []cri.Config
	factory := func(ctx context.Context, cfg cri.Config) (cri.Node, error) {
		got = append(got, cfg)
		n, err := crisim.NewNode(ctx, cri.Config{Name: cfg.Name, PodCIDR: cfg.PodCIDR})
		n.RealContainers = true
		return n, err
	}
	dir := t.TempDir()
	s := &Set{cfg: Config{Nodes: nodes.Defaults(2), DataDir: dir, Tracer: tr, Seed: 7, Runtime: factory,
		Routes: func(i int) []string { return []string{"10.96.0.0/12"} }}}
	defer s.Shutdown(context.Background())
	for i := range 2 {
		rt, err := s.newRuntime(context.Background(), i)
		if err != nil {
			t.Fatal(err)
		}
		s.runtimes = append(s.runtimes, rt.Node)
		if !rt.RealContainers || rt.hooks == nil || rt.tracerProvider == nil {
			t.Errorf("node %d: %+v, want the factory's runtime behind an interposer, with the kubelet's tracer provider", i, rt)
		}
	}
	if len(got) != 2 {
		t.Fatalf("factory called %d times, want 2", len(got))
	}
	n := got[1]
	if n.Name != "node-2" || n.Seed != 8 || n.Dir != filepath.Join(dir, "runtime", "node-2") || n.StateFile != "" ||
		n.HostDir != filepath.Join(dir, "host", "node-2") ||
		len(n.Routes) != 1 || n.Observer == nil || n.KubeletTracerProvider == nil || n.NewTracerProvider != nil {
		t.Errorf("node-2's runtime config %+v", n)
	}
}

func TestStartNeedsCredentials(t *testing.T) {
	if _, err := Start(context.Background(), Config{Nodes: nodes.Defaults(1), DataDir: t.TempDir()}); err == nil {
		t.Fatal("Start accepted a set with no Credentials")
	}
}

// A node that cannot start takes the set down: the runtimes already made
// are closed (a real runtime's containers and mounts would stay otherwise).
func TestFailedStartClosesRuntimes(t *testing.T) {
	closed := 0
	factory := func(ctx context.Context, cfg cri.Config) (cri.Node, error) {
		n, err := crisim.NewNode(ctx, cri.Config{Name: cfg.Name, PodCIDR: cfg.PodCIDR})
		stop := n.Close
		n.Close = func(ctx context.Context) error {
			closed++
			if stop == nil {
				return nil
			}
			return stop(ctx)
		}
		return n, err
	}
	refuse := func(i int, n nodes.Spec) (Credentials, error) {
		return Credentials{}, fmt.Errorf("no identity for %s", n.Name)
	}
	_, err := Start(context.Background(), Config{Nodes: nodes.Defaults(2), DataDir: t.TempDir(), Runtime: factory, Credentials: refuse})
	if err == nil || !strings.Contains(err.Error(), "no identity for node-") {
		t.Fatalf("Start: %v, want the node's error", err)
	}
	if closed != 2 {
		t.Errorf("%d runtimes closed after the failed start, want 2", closed)
	}
}
