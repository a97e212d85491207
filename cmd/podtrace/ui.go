package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/tui"
)

// recordEnv names a file that receives every stage event as a JSON line
// while the UI runs (the format of `run --headless`, which the UI's replay
// reads back). Benchmarks compare it with a headless run of the same workload.
const recordEnv = "PODTRACE_RECORD"

// runUI opens the terminal UI on the engine. A manifest is applied once the
// nodes are Ready, as `run --headless` does, before the UI takes the screen.
func runUI(ctx context.Context, e *engine.Engine, manifest []byte, file, theme string) error {
	// Printed before the UI takes the screen, and left in the scrollback.
	fmt.Fprintf(os.Stderr, "export KUBECONFIG=%s\n", e.Kubeconfig)
	if path := os.Getenv(recordEnv); path != "" {
		stop, err := record(e.Hub, path)
		if err != nil {
			return err
		}
		defer stop()
	}
	src, err := newEngineSource(ctx, e)
	if err != nil {
		return err
	}
	if len(manifest) > 0 {
		if err := waitNodesReady(ctx, e); err != nil {
			return err
		}
		if _, err := src.applier.Apply(ctx, manifest, file); err != nil {
			return err
		}
	}
	return tui.Run(ctx, src, tui.Options{Theme: theme, NoColor: os.Getenv("NO_COLOR") != ""})
}

// record writes every event of hub to path as JSON lines until stop is called.
func record(hub *trace.Hub, path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("record events: %w", err)
	}
	sub := hub.Subscribe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		writeEvents(f, sub)
	}()
	return func() {
		flush(sub)
		sub.Close()
		<-done
		f.Close()
	}, nil
}

// writeEvents encodes the subscription's events until it is closed.
func writeEvents(w io.Writer, sub *trace.Subscription) {
	enc := json.NewEncoder(w)
	for ev := range sub.C() {
		if enc.Encode(ev) != nil {
			return
		}
	}
}
