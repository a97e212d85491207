// Package stream writes a source's stage events out of the UI: as JSON
// lines (run --headless, attach --headless, agent --events, and the
// recordings podtrace replay reads), and as OpenTelemetry traces.
package stream

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/source/rows"
	"github.com/podtrace/podtrace/stages"
)

// Printer writes every event of a hub, and the rows of a feed, as JSON
// lines until Stop. It subscribes when created, so it misses nothing
// emitted after.
type Printer struct {
	sub  *trace.Subscription
	done chan struct{}
}

// Print starts writing hub's events, and feed's rows as {"row": ...} lines
// (nil for none), to w.
func Print(w io.Writer, hub *trace.Hub, feed *rows.Feed) *Printer {
	p := &Printer{sub: hub.Subscribe(), done: make(chan struct{})}
	go func() { defer close(p.done); write(w, p.sub, feed) }()
	return p
}

// Flush waits (at most 2 s) until every event emitted so far is written.
func (p *Printer) Flush() { flush(p.sub) }

// Stop writes what is pending, ends the subscription and waits for the
// last line.
func (p *Printer) Stop() {
	flush(p.sub)
	p.sub.Close()
	<-p.done
}

// Record writes every event of hub, and the rows of feed (nil for none),
// to path as JSON lines until stop is called.
func Record(hub *trace.Hub, feed *rows.Feed, path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("record events: %w", err)
	}
	p := Print(f, hub, feed)
	return func() { p.Stop(); f.Close() }, nil
}

// write encodes the subscription's events, and the rows of feed (nil for
// none), until the subscription is closed or w fails.
func write(w io.Writer, sub *trace.Subscription, feed *rows.Feed) {
	enc := json.NewEncoder(w)
	var rowsC <-chan stages.Row
	if feed != nil {
		rowsC = feed.C()
	}
	for {
		var err error
		select {
		case ev, ok := <-sub.C():
			if !ok {
				return
			}
			err = enc.Encode(ev)
		case r, ok := <-rowsC:
			if !ok {
				rowsC = nil
				continue
			}
			err = enc.Encode(stages.Record{Row: &r})
		}
		if err != nil {
			return
		}
	}
}

// flush waits (briefly) until every emitted event has been taken.
func flush(sub *trace.Subscription) {
	deadline := time.Now().Add(2 * time.Second)
	for sub.Pending() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // let the writer finish its last line
}
