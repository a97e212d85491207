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
		evs, err := tui.ReadEvents(bytes.NewReader(data))
		if err != nil {
			return fmt.Errorf("replay %s: %w", name, err)
		}
		src, err := tui.NewReplaySource(name, bytes.NewReader(nil), 1)
		if err != nil {
			return err
		}
		_, err = io.WriteString(os.Stdout, Snapshot(recording{ReplaySource: src, st: recordingStatus(evs)}, evs, w, h)+"\n")
		return err
	}
	evs, err := tui.ReadEvents(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("replay %s: %w", name, err)
	}
	if o.from < 0 {
		return fmt.Errorf("--from %s: must not be negative", o.from)
	}
	initial := o.speed
	if o.from > 0 {
		initial = 0 // as fast as the UI reads, until the start point
	}
	src, err := tui.NewReplaySource(name, bytes.NewReader(data), initial)
	if err != nil {
		return err
	}
	src.Start(ctx)
	rec := recording{ReplaySource: src, st: recordingStatus(evs)}
	if o.from > 0 && len(evs) > 0 {
		rec.events = seek(src, evs[0].Time.Add(o.from), o.speed)
	}
	return tui.Run(ctx, rec, tui.Options{Theme: o.theme, NoColor: os.Getenv("NO_COLOR") != ""})
}

// seek forwards src's events and, at the first one at or after start,
// slows the replay down to speed.
func seek(src *tui.ReplaySource, start time.Time, speed float64) <-chan stages.Event {
	out := make(chan stages.Event, 1024)
	go func() {
		defer close(out)
		slowed := false
		for e := range src.Events() {
			if !slowed && !e.Time.Before(start) {
				slowed = true
				_ = src.Clock().SetSpeed(speed)
			}
			out <- e
		}
	}()
	return out
}

// recording is a ReplaySource whose header also says what the recorded
// Source could not see and how precise its times were.
type recording struct {
	*tui.ReplaySource
	st     tui.Status
	events <-chan stages.Event // when seeking; the source's own otherwise
}

// Events returns the replayed events.
func (r recording) Events() <-chan stages.Event {
	if r.events != nil {
		return r.events
	}
	return r.ReplaySource.Events()
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

// Snapshot folds evs into a UI model for src at w×h and returns the frame
// as plain text: the lanes a replay of evs ends with. The wall clock is
// pinned to the last event so running stages show a repeatable age.
func Snapshot(src tui.Source, evs []stages.Event, w, h int) string {
	var last time.Time
	for _, e := range evs {
		if e.Time.After(last) {
			last = e.Time
		}
	}
	m := tui.New(src, tui.Options{NoColor: true, Now: func() time.Time { return last }})
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	m.Fold(evs...)
	return ansi.Strip(m.Render())
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
