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

	"github.com/podtrace/podtrace/stages"
	"github.com/podtrace/podtrace/tui"
)

// replayCmd opens the UI on a recording: `podtrace replay FILE`.
func replayCmd(ctx context.Context, args []string) error {
	fs := newFlagSet("replay")
	speed := fs.Float64("speed", 1, "recorded seconds per real second (in the UI: space pauses, +/- change the speed, > skips to the next event)")
	theme := fs.String("theme", "", "UI theme: dark, light, high-contrast, colorblind")
	from := fs.Duration("from", 0, "start `DURATION` into the recording: what came before is drawn at once")
	snapshot := fs.String("snapshot", "", "print the lanes once every event is folded, at `WIDTHxHEIGHT` (e.g. 120x40), without colour, instead of opening the UI")
	file, rest := splitPositional(args)
	if err := parse(fs, rest); err != nil {
		return err
	}
	if file == "" {
		return fmt.Errorf("replay needs a recording: podtrace replay FILE (from run --headless or attach --record)")
	}
	if *speed <= 0 {
		return fmt.Errorf("--speed %g: must be positive", *speed)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	name := filepath.Base(file)
	if *snapshot != "" {
		w, h, err := parseSize(*snapshot)
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
	if *from < 0 {
		return fmt.Errorf("--from %s: must not be negative", *from)
	}
	initial := *speed
	if *from > 0 {
		initial = 0 // as fast as the UI reads, until the start point
	}
	src, err := tui.NewReplaySource(name, bytes.NewReader(data), initial)
	if err != nil {
		return err
	}
	src.Start(ctx)
	rec := recording{ReplaySource: src, st: recordingStatus(evs)}
	if *from > 0 && len(evs) > 0 {
		rec.events = seek(src, evs[0].Time.Add(*from), *speed)
	}
	return tui.Run(ctx, rec, tui.Options{Theme: *theme, NoColor: os.Getenv("NO_COLOR") != ""})
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

// splitPositional takes the first argument that is not a flag (nor a
// flag's value) out of args, so that `replay FILE --speed 2` and
// `replay --speed 2 FILE` both work.
func splitPositional(args []string) (string, []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			if i+1 < len(args) {
				return args[i+1], append(append([]string{}, args[:i]...), args[i+2:]...)
			}
			return "", args[:i]
		}
		if strings.HasPrefix(a, "-") {
			if !strings.Contains(a, "=") && !boolFlags[strings.TrimLeft(a, "-")] {
				i++ // its value
			}
			continue
		}
		return a, append(append([]string{}, args[:i]...), args[i+1:]...)
	}
	return "", args
}

// boolFlags are the flags of replay, attach and agent that take no value.
var boolFlags = map[string]bool{"A": true, "all-namespaces": true, "headless": true, "events": true, "h": true, "help": true}

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
