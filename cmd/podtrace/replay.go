package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/spf13/cobra"

	"github.com/podtrace/podtrace/source/stream"
	"github.com/podtrace/podtrace/stages"
	"github.com/podtrace/podtrace/tui"
)

// newReplayCmd builds `podtrace replay FILE`: the UI on a recording.
func newReplayCmd() *cobra.Command {
	var o replayOptions
	c := &cobra.Command{
		Use:   "replay FILE [flags]",
		Short: "The UI on a recorded JSON-lines stream (pause, speed, skip ahead)",
		Long: `Draw the lanes of a recording: the JSON lines run --headless prints or
attach --record writes. In the UI, space pauses, +/- change the speed and >
skips to the next event.`,
		Example: `  podtrace replay web.jsonl --speed 4
  podtrace replay web.jsonl --snapshot 120x40`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("replay needs a recording: podtrace replay FILE (from run --headless or attach --record)")
			}
			return noArgs(nil, args[1:])
		},
		RunE: func(c *cobra.Command, args []string) error { return replayRun(c.Context(), args[0], o) },
	}
	c.Flags().Float64Var(&o.speed, "speed", 1, "recorded seconds per real second (in the UI: space pauses, +/- change the speed, > skips to the next event)")
	c.Flags().StringVar(&o.theme, "theme", "", "UI theme: dark, light, high-contrast, colorblind")
	c.Flags().DurationVar(&o.from, "from", 0, "start `DURATION` into the recording: what came before is drawn at once")
	c.Flags().StringVar(&o.snapshot, "snapshot", "", "print the lanes once every event is folded, at `WIDTHxHEIGHT` (e.g. 120x40), without colour, instead of opening the UI")
	return c
}

// replayOptions are replay's flags.
type replayOptions struct {
	speed           float64
	theme, snapshot string
	from            time.Duration
}

// replayRun replays the recording in file.
func replayRun(ctx context.Context, file string, o replayOptions) error {
	if o.speed <= 0 {
		return fmt.Errorf("--speed %g: must be positive", o.speed)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	name := filepath.Base(file)
	if o.snapshot != "" {
		w, h, err := parseSize(o.snapshot)
		if err != nil {
			return err
		}
		recs, err := tui.ReadRecords(bytes.NewReader(data))
		if err != nil {
			return fmt.Errorf("replay %s: %w", name, err)
		}
		src, err := tui.NewReplaySource(name, bytes.NewReader(nil), 1)
		if err != nil {
			return err
		}
		stopExport, err := stream.ExportEvents(events(recs))
		if err != nil {
			return err
		}
		defer stopExport()
		_, err = io.WriteString(os.Stdout, Snapshot(recording{ReplaySource: src, st: recordingStatus(events(recs))}, recs, w, h)+"\n")
		return err
	}
	evs, err := tui.ReadEvents(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("replay %s: %w", name, err)
	}
	if o.from < 0 {
		return fmt.Errorf("--from %s: must not be negative", o.from)
	}
	src, err := tui.NewReplaySource(name, bytes.NewReader(data), o.speed)
	if err != nil {
		return err
	}
	stopExport, err := stream.ExportEvents(evs)
	if err != nil {
		return err
	}
	defer stopExport()
	src.From(o.from) // what came before plays at once
	src.Start(ctx)
	rec := recording{ReplaySource: src, st: recordingStatus(evs)}
	return tui.Run(ctx, rec, tui.Options{Theme: o.theme, NoColor: os.Getenv("NO_COLOR") != ""})
}

// events returns the stage events of a recording, without its rows.
func events(recs []stages.Record) []stages.Event {
	var out []stages.Event
	for _, r := range recs {
		if r.Row == nil {
			out = append(out, r.Event)
		}
	}
	return out
}

// recording is a ReplaySource whose header also says what the recorded
// Source could not see and how precise its times were.
type recording struct {
	*tui.ReplaySource
	st tui.Status
}

// Status adds the recording's resolution and unobservable stages.
func (r recording) Status() tui.Status {
	st := r.ReplaySource.Status()
	st.Resolution, st.Unobservable = r.st.Resolution, r.st.Unobservable
	return st
}

// recordingStatus infers from a recording what its Source could observe: a
// lifecycle stage that no event of any Pod lane reports, while a later
// one is reported, was not observable there (attach without an audit log
// has no authn, authz or admission); and when every time but the few finer
// ones (a pull's own measure, the scheduler's events) falls on a whole
// second, the recording came from a real cluster's one-second timestamps.
func recordingStatus(evs []stages.Event) tui.Status {
	var st tui.Status
	seen := map[stages.ID]bool{}
	whole, pods := 0, 0
	for _, e := range evs {
		if e.Kind != "" && e.Kind != stages.KindPod {
			continue
		}
		pods++
		seen[e.Stage] = true
		if e.Time.Truncate(time.Second).Equal(e.Time) {
			whole++
		}
	}
	if pods == 0 {
		return st
	}
	for i, id := range stages.Lifecycle {
		if seen[id] {
			continue
		}
		for _, later := range stages.Lifecycle[i+1:] {
			if seen[later] {
				st.Unobservable = append(st.Unobservable, id)
				break
			}
		}
	}
	if whole*10 >= pods*8 {
		st.Resolution = time.Second
	}
	return st
}

// Snapshot folds a recording's events and rows into a UI model for src at
// w×h and returns the frame as plain text: the lanes a replay ends with.
// The wall clock is pinned to the last record so running stages show a
// repeatable age.
func Snapshot(src tui.Source, recs []stages.Record, w, h int) string {
	var last time.Time
	for _, r := range recs {
		t := r.Time
		if r.Row != nil {
			t = r.Row.Time
		}
		last = maxTime(last, t)
	}
	m := tui.New(src, tui.Options{NoColor: true, Now: func() time.Time { return last }})
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	for _, r := range recs {
		if r.Row != nil {
			m.Apply(*r.Row)
		} else {
			m.Fold(r.Event)
		}
	}
	return ansi.Strip(m.Render())
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// parseSize parses WIDTHxHEIGHT.
func parseSize(s string) (int, int, error) {
	ws, hs, ok := strings.Cut(strings.ToLower(s), "x")
	w, err1 := strconv.Atoi(ws)
	h, err2 := strconv.Atoi(hs)
	if !ok || err1 != nil || err2 != nil || w < 40 || h < 10 {
		return 0, 0, fmt.Errorf("size %q: want WIDTHxHEIGHT, at least 40x10", s)
	}
	return w, h, nil
}
