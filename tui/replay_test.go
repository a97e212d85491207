package tui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/podtrace/podtrace/internal/waittest"
	"github.com/podtrace/podtrace/stages"
)

func recording(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, e := range story() {
		if err := enc.Encode(e); err != nil {
			t.Fatal(err)
		}
	}
	b.WriteString("\n") // blank lines are fine
	return b.Bytes()
}

func TestReadEventsReportsBadLine(t *testing.T) {
	_, err := ReadEvents(strings.NewReader(`{"stage":"pull","status":"started","pod":"a","namespace":"d","component":"kubelet","time":"2026-01-01T00:00:00Z","durationMs":0}` + "\n{oops\n"))
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("error %v, want one naming line 2", err)
	}
	_, err = ReadEvents(strings.NewReader(`{"stage":"launch","status":"started"}`))
	if err == nil || !strings.Contains(err.Error(), `unknown stage "launch"`) {
		t.Fatalf("error %v, want unknown stage", err)
	}
}

func TestReplayDrawsTheSameLanesAsLive(t *testing.T) {
	src, err := NewReplaySource("run.jsonl", bytes.NewReader(recording(t)), 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src.Start(ctx)
	wall := time.Date(2030, 6, 1, 0, 0, 0, 0, time.UTC)
	m := New(src, Options{Now: func() time.Time { return wall }})
	m.Update(winSize(120, 40))
	waittest.EventuallyEvery(t, "the replay to end", time.Millisecond, 10*time.Second, func() (bool, string) {
		m.Update(frameMsg(time.Now()))
		return m.ended, ""
	})
	m.anchorEng = at(3000)
	live, _, _ := fixture(120, 40, "dark")
	// The lanes (body without header, tabs and events strip) must match the live fixture's.
	got, want := ansi.Strip(m.Render()), ansi.Strip(live.Render())
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 2; i < 10; i++ {
		if gl[i] != wl[i] && !strings.Contains(gl[i], "source ended") {
			t.Errorf("line %d\nreplay: %s\nlive:   %s", i, gl[i], wl[i])
		}
	}
	if !strings.Contains(got, "recording run.jsonl") || !strings.Contains(got, "read-only") {
		t.Errorf("header does not name the recording:\n%s", gl[0])
	}
	if err := src.Apply(nil); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("apply on a recording: %v", err)
	}
}

func TestReplayPacesAndPauses(t *testing.T) {
	src, err := NewReplaySource("r", bytes.NewReader(recording(t)), 1)
	if err != nil {
		t.Fatal(err)
	}
	ck := src.Clock()
	if err := ck.SetPaused(true); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src.Start(ctx)
	<-src.Events() // the first event needs no wait
	select {
	case e := <-src.Events():
		t.Fatalf("a paused replay emitted %+v", e)
	case <-time.After(100 * time.Millisecond):
	}
	if err := ck.SetSpeed(1000); err != nil {
		t.Fatal(err)
	}
	if err := ck.SetPaused(false); err != nil {
		t.Fatal(err)
	}
	n := 0
	timeout := time.After(5 * time.Second)
	for range src.Events() {
		n++
		select {
		case <-timeout:
			t.Fatal("replay at 1000× did not finish in 5 s")
		default:
		}
	}
	if n < len(story())-2 {
		t.Fatalf("replayed %d of %d events", n, len(story()))
	}
}

// A recording is written as it is read, not strictly in time order; its
// replay still takes as long as the recording did (it took 85 s for 20 s
// when each step back in time was waited for again), and its rows come
// back beside its events.
func TestReplayPaceAndRows(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for i := 0; i < 6; i++ {
		at := time.Duration(i%2) * 300 * time.Millisecond // 0, 300ms, 0, 300ms, ...
		e := stages.Event{Time: t0.Add(at), Namespace: "d", Pod: fmt.Sprint("p", i), Stage: stages.Persist, Status: stages.Succeeded}
		if err := enc.Encode(stages.Record{Event: e}); err != nil {
			t.Fatal(err)
		}
	}
	row := stages.Row{Time: t0.Add(300 * time.Millisecond), Kind: stages.KindPod, Namespace: "d", Name: "p0", Status: "Running", Ready: "1/1"}
	if err := enc.Encode(stages.Record{Row: &row}); err != nil {
		t.Fatal(err)
	}
	src, err := NewReplaySource("r", &b, 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	begin := time.Now()
	src.Start(ctx)
	n, rows := 0, 0
	for ev, rw := src.Events(), src.Rows(); ev != nil || rw != nil; {
		select {
		case _, ok := <-ev:
			if !ok {
				ev = nil
				continue
			}
			n++
		case r, ok := <-rw:
			if !ok {
				rw = nil
				continue
			}
			if r.Status != "Running" || r.Name != "p0" {
				t.Errorf("row %+v", r)
			}
			rows++
		}
	}
	if took := time.Since(begin); took > 900*time.Millisecond {
		t.Errorf("a 300 ms recording took %s to replay", took)
	}
	if n != 6 || rows != 1 {
		t.Errorf("replayed %d events and %d rows, want 6 and 1", n, rows)
	}
}
