package main

import (
	"context"
	"errors"
	"os"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/apply"
	"github.com/podtrace/podtrace/source/live"
	"github.com/podtrace/podtrace/source/stream"
	"github.com/podtrace/podtrace/tui"
)

// recordEnv names a file that receives every stage event as a JSON line
// while the UI runs (the format of `run --headless`, which the UI's replay
// reads back). Benchmarks compare it with a headless run of the same workload.
const recordEnv = "PODTRACE_RECORD"

// startFunc starts the engine; the cleanup it returns stops it.
type startFunc func(ctx context.Context) (*engine.Engine, func(), error)

// runUI opens the terminal UI at once and starts the engine behind
// it: the first frame does not wait for etcd (the header says "etcd
// starting" until the cluster is up). The manifests, if any, are applied once
// the nodes are Ready. When the cluster cannot start or the manifest cannot
// be applied, the UI closes and the error is returned.
func runUI(ctx context.Context, start startFunc, objs []apply.Object, theme string) error {
	uiCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	src := live.New(uiCtx)
	var (
		cleanup   func()
		stopRec   func()
		engineErr error
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var e *engine.Engine
		if e, cleanup, engineErr = start(uiCtx); engineErr == nil {
			stopRec, engineErr = connect(uiCtx, src, e, objs)
		}
		if engineErr != nil {
			src.SetFailed()
			cancel()
		}
	}()
	err := tui.Run(uiCtx, src, tui.Options{Theme: theme, NoColor: os.Getenv("NO_COLOR") != ""})
	userQuit := uiCtx.Err() == nil // else the engine's failure (or a signal) ended the UI
	cancel()
	<-done
	if stopRec != nil {
		stopRec()
	}
	if cleanup != nil {
		cleanup()
	}
	if engineErr != nil && !userQuit && !errors.Is(engineErr, context.Canceled) {
		return engineErr
	}
	return err
}

// connect attaches the source to the started engine, starts the recording
// asked for by PODTRACE_RECORD and the trace export asked for by the
// OpenTelemetry environment, and applies the manifest. The returned stop
// ends both (nil when neither runs).
func connect(ctx context.Context, src *live.Source, e *engine.Engine, objs []apply.Object) (stop func(), err error) {
	stopExport, err := stream.Export(e.Hub)
	if err != nil {
		return nil, err
	}
	stop = stopExport
	if path := os.Getenv(recordEnv); path != "" {
		stopRec, err := stream.Record(e.Hub, src.TeeRows(ctx), path)
		if err != nil {
			return stop, err
		}
		stop = func() { stopRec(); stopExport() }
	}
	if err := src.Attach(e); err != nil {
		return stop, err
	}
	if len(objs) > 0 { // engine.Start returned with every node Ready
		if err := applyManifests(ctx, src.Applier(), objs); err != nil {
			return stop, err
		}
	}
	return stop, nil
}
