package tuie2e

import (
	"strings"
	"testing"
	"time"

	"github.com/podtrace/podtrace/internal/podtracebin"
	"github.com/podtrace/podtrace/internal/tmuxtest"
)

// Start and stop of a scenario, as the issue asks them.
const (
	// storyWithin is the most the story may take to appear.
	storyWithin = time.Second
	// stopWithin is the most q may take to end podtrace.
	stopWithin = 2 * time.Second
)

// TestScenarioStartsAndStops times `podtrace scenario NAME` in tmux: its
// story is on the screen within 1 s of the start, with the cluster's
// start-up progress under it (on a loaded machine: no later than plain
// podtrace's first frame, measured here too, plus a quarter); and q, once
// the cluster is broken, says "stopping the cluster…" and exits within 2 s.
func TestScenarioStartsAndStops(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	tmuxtest.Need(t)
	bin := podtracebin.Path(t)
	plain := firstFrame(t, bin)
	for _, name := range []string{"crash-loop", "etcd-slow"} {
		t.Run(name, func(t *testing.T) {
			tm := startTerm(t, 200, 60, bin, "scenario", name, "--data-dir", t.TempDir())
			s, took := appears(t, tm, "Goal: ", time.Minute)
			want := max(storyWithin, plain*5/4)
			t.Logf("%s: story after %s (plain podtrace's first frame %s)", name, took.Round(time.Millisecond), plain.Round(time.Millisecond))
			if took > want {
				t.Errorf("%s: the story took %s to appear, want ≤ %s", name, took.Round(time.Millisecond), want)
			}
			if story, progress := strings.Index(s, "Goal: "), strings.Index(s, "Starting the cluster"); progress < story {
				t.Errorf("no start-up progress under the story:\n%s", s)
			}
			tm.WaitFor("the cluster broken", 2*time.Minute, tmuxtest.Has("The cluster is broken as the story says"))
			tm.Keys("Escape")
			tm.WaitFor("the lanes", 10*time.Second, tmuxtest.Has(" NAME ", " RESTARTS "))
			tm.Keys("q")
			quit := time.Now()
			s, _ = appears(t, tm, "podtrace exited", time.Minute)
			stopped := time.Since(quit)
			t.Logf("%s: q → exit %s", name, stopped.Round(time.Millisecond))
			if !strings.Contains(s, "stopping the cluster…") || !strings.Contains(s, "podtrace exited 0") {
				t.Errorf("q does not say it is stopping the cluster, or podtrace failed:\n%s", s)
			}
			if stopped > stopWithin {
				t.Errorf("%s: q took %s to exit, want ≤ %s", name, stopped.Round(time.Millisecond), stopWithin)
			}
		})
	}
}

// appears polls the screen every 5 ms until it holds text and returns it
// with the time since the terminal started.
func appears(t *testing.T, tm *term, text string, timeout time.Duration) (string, time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s := tm.Screen()
		if strings.Contains(s, text) {
			return s, time.Since(tm.Started)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q after %s:\n%s", text, timeout, s)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
