package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/podtrace/podtrace/stages"
	"github.com/podtrace/podtrace/tui"
)

// TestFrom replays the part before the start point at once and the rest
// at the chosen speed.
func TestFrom(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, s := range []int{0, 60, 120, 121} {
		if err := enc.Encode(stages.Event{Time: t0.Add(time.Duration(s) * time.Second), Namespace: "d", Pod: "p",
			Stage: stages.Persist, Status: stages.Succeeded}); err != nil {
			t.Fatal(err)
		}
	}
	src, err := tui.NewReplaySource("r", &b, 2)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src.From(100 * time.Second)
	src.Start(ctx)
	out := src.Events()
	begin := time.Now()
	for i := 0; i < 3; i++ {
		select {
		case <-out:
		case <-time.After(2 * time.Second):
			t.Fatalf("event %d before the start point not delivered at once", i)
		}
	}
	if took := time.Since(begin); took > time.Second {
		t.Errorf("two minutes of recording before the start point took %s", took)
	}
	select {
	case <-out:
	case <-time.After(3 * time.Second):
		t.Fatal("the event one second later did not come at speed 2")
	}
}
