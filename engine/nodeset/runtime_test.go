package nodeset

import (
	"context"
	"path/filepath"
	"testing"

	"k8s.io/utils/clock"

	crihooks "github.com/podtrace/podtrace/engine/hooks/cri"
	"github.com/podtrace/podtrace/engine/nodes"
	"github.com/podtrace/podtrace/engine/trace"
)

// TestSimRuntime builds simulated runtimes as Start does: with a Tracer
// each sits behind an interposer that answers its node's plugin calls and
// follows faults; without one the kubelet would drive the runtime itself.
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
			s := &Set{cfg: Config{Nodes: nodes.Defaults(2), DataDir: dir, Tracer: tt.tracer, KeepState: tt.keepState},
				byName: map[string]*crihooks.Hooks{}}
			defer s.Shutdown(context.Background())
			rt, err := s.newRuntime(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(s.sims) != 1 || rt.runtime == nil || rt.images == nil {
				t.Fatalf("runtime %+v, %d simulated runtimes; want node-2's", rt, len(s.sims))
			}
			traced := tt.tracer != nil
			if (rt.hooks != nil) != traced || (s.pluginHandler("node-2") != nil) != traced {
				t.Errorf("interposer %v, plugin handler %v; want both %v", rt.hooks != nil, s.pluginHandler("node-2") != nil, traced)
			}
			if traced && (rt.hooks.NodeName() != "node-2" || rt.runtime == any(s.sims[0])) {
				t.Errorf("the kubelet drives %T of %s, want the interposer of node-2", rt.runtime, rt.hooks.NodeName())
			}
			if s.pluginHandler("node-1") != nil {
				t.Error("a plugin handler for node-1, whose runtime was not built")
			}
			if err := s.sims[0].Save(ctx); err != nil {
				t.Fatal(err)
			}
			if got, _ := filepath.Glob(filepath.Join(dir, "runtime", "node-2.json")); (len(got) == 1) != tt.keepState {
				t.Errorf("state file %v with KeepState %v", got, tt.keepState)
			}
		})
	}
}

func TestStartNeedsCredentials(t *testing.T) {
	if _, err := Start(context.Background(), Config{Nodes: nodes.Defaults(1), DataDir: t.TempDir()}); err == nil {
		t.Fatal("Start accepted a set with no Credentials")
	}
}
