package stream

import (
	"context"
	"time"

	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/export/otlp"
	"github.com/podtrace/podtrace/stages"
	"github.com/podtrace/podtrace/version"
)

// exportTimeout bounds how long podtrace waits, on its way out, for the
// last spans to reach an OTLP endpoint.
const exportTimeout = 5 * time.Second

// Export sends every event of hub as OTLP spans when the OpenTelemetry
// environment asks for it (see docs/tracing.md). The hub's subscription
// queues without bound, so a slow or absent endpoint never holds a
// producer back. stop (never nil) ends the export, sending what is left
// within exportTimeout.
func Export(hub *trace.Hub) (stop func(), err error) {
	x, err := otlp.Start(context.Background(), version.Podtrace)
	if err != nil || x == nil {
		return func() {}, err
	}
	sub := hub.Subscribe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range sub.C() {
			x.Emit(ev)
		}
	}()
	return func() {
		flush(sub)
		sub.Close()
		<-done
		shutdown(x)
	}, nil
}

// ExportEvents sends a recording's events as OTLP spans when the
// OpenTelemetry environment asks for it, all at once, in the background.
// stop (never nil) sends what is left within exportTimeout.
func ExportEvents(evs []stages.Event) (stop func(), err error) {
	x, err := otlp.Start(context.Background(), version.Podtrace)
	if err != nil || x == nil {
		return func() {}, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, ev := range evs {
			x.Emit(ev)
		}
		ctx, cancel := context.WithTimeout(context.Background(), exportTimeout)
		defer cancel()
		_ = x.Flush(ctx) // a down endpoint is the user's to see in their tracing backend
	}()
	return func() { <-done; shutdown(x) }, nil
}

// shutdown ends x within exportTimeout. A failure to send is not
// podtrace's failure: the UI or the recording already showed the events.
func shutdown(x *otlp.Exporter) {
	ctx, cancel := context.WithTimeout(context.Background(), exportTimeout)
	defer cancel()
	_ = x.Shutdown(ctx)
}
