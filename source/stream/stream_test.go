package stream

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/source/rows"
	"github.com/podtrace/podtrace/stages"
	"github.com/podtrace/podtrace/tui"
)

// A recording holds every event emitted before stop, in order, and the
// rows beside them, in the format podtrace replay reads back.
func TestRecordKeepsEveryEventAndRow(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hub := trace.NewHub()
	feed := rows.NewFeed(ctx)
	path := filepath.Join(t.TempDir(), "run.jsonl")
	stop, err := Record(hub, feed, path)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	order := []stages.ID{stages.Authn, stages.Authz, stages.Admission, stages.Persist}
	for i, id := range order {
		hub.Emit(stages.Event{Time: t0.Add(time.Duration(i) * time.Millisecond), Namespace: "default", Pod: "web-1",
			Kind: stages.KindPod, Stage: id, Status: stages.Succeeded, Component: "kube-apiserver"})
	}
	feed.Push(stages.Row{Time: t0, Kind: "Pod", Namespace: "default", Name: "web-1", Status: "Pending"})
	time.Sleep(100 * time.Millisecond) // the feed hands its row on
	stop()

	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := tui.ReadRecords(f)
	if err != nil {
		t.Fatal(err)
	}
	var got []stages.ID
	var rowsSeen int
	for _, r := range recs {
		if r.Row != nil {
			rowsSeen++
			continue
		}
		got = append(got, r.Event.Stage)
	}
	if len(got) != len(order) {
		t.Fatalf("recorded stages %v, want %v", got, order)
	}
	for i := range order {
		if got[i] != order[i] {
			t.Fatalf("recorded stages %v, want %v", got, order)
		}
	}
	if rowsSeen != 1 {
		t.Errorf("%d rows recorded, want 1", rowsSeen)
	}
}

// Record refuses a path it cannot create in one line, before subscribing.
func TestRecordUnwritablePath(t *testing.T) {
	_, err := Record(trace.NewHub(), nil, filepath.Join(t.TempDir(), "missing", "run.jsonl"))
	if err == nil || err.Error()[:len("record events: ")] != "record events: " {
		t.Fatalf("err = %v, want a record events: error", err)
	}
}
