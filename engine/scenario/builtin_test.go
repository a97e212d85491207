package scenario_test

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/enginetest"
	"github.com/podtrace/podtrace/engine/logs"
	"github.com/podtrace/podtrace/engine/scenario"
)

func TestMain(m *testing.M) { enginetest.Main(m) }

// startFor starts an engine with the scenario's nodes on the real kubelet,
// as `podtrace scenario` does, its clock fast.
func startFor(t *testing.T, s *scenario.Scenario) *engine.Engine {
	t.Helper()
	logs.To(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	e, err := engine.Start(ctx, engine.Config{DataDir: t.TempDir(), UnsafeNoFsync: true, Nodes: s.Nodes, Speed: 20, Seed: 1,
		MaxContainerRestartPeriod: s.MaxContainerRestartPeriod})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	go scenario.WatchNodeFaults(ctx, e)
	t.Cleanup(func() { cancel(); e.Close() })
	return e
}

// TestBuiltinScenariosBehaveAsDocumented runs every built-in scenario
// headless: its documented events and messages appear, the goal does not
// hold, and the documented fix makes it hold.
func TestBuiltinScenariosBehaveAsDocumented(t *testing.T) {
	all, err := scenario.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	only := os.Getenv("SCENARIO")
	for _, s := range all {
		if only != "" && s.Name != only {
			continue
		}
		t.Run(s.Name, func(t *testing.T) {
			e := startFor(t, s)
			var log strings.Builder
			rep, err := scenario.Check(context.Background(), e, s, scenario.CheckOptions{Timeout: 60 * time.Second, Log: &log})
			t.Log(log.String())
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Seen) != len(s.Expect) || rep.Broken == "" || rep.Fixed == "" {
				t.Fatalf("incomplete report %+v", rep)
			}
		})
	}
}
