package tuie2e

import (
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podtrace/podtrace/internal/podtracebin"
	"github.com/podtrace/podtrace/internal/tmuxtest"
	"github.com/podtrace/podtrace/internal/waittest"
)

// startStopScenario starts `podtrace scenario name` in tmux, checks that
// the story comes first with the cluster's start-up progress under it and
// that q, once the cluster is broken, stops the cluster and exits 0; it
// returns when the story appeared and how long q took to end podtrace.
func startStopScenario(tb testing.TB, bin, name string) (story, stop time.Duration) {
	tb.Helper()
	tm := startTerm(tb, 200, 60, bin, "scenario", name, "--data-dir", tb.TempDir())
	story = storyFirst(tb, tm, name)
	tm.WaitFor("the cluster broken", clusterStart, tmuxtest.Has("The cluster is broken as the story says"))
	tm.Keys("Escape")
	tm.WaitFor("the lanes", 30*time.Second, tmuxtest.Has(" NAME ", " RESTARTS "))
	tm.Keys("q")
	quit := time.Now()
	s, _ := appears(tb, tm, "podtrace exited", time.Minute)
	stop = time.Since(quit)
	stoppedCleanly(tb, name, s)
	return story, stop
}

// storyFirst waits for the scenario's story, checks that the cluster's
// start-up progress shows under it, and returns when the story appeared.
func storyFirst(tb testing.TB, tm *term, name string) time.Duration {
	tb.Helper()
	s, story := appears(tb, tm, "Goal: ", time.Minute)
	if goal, progress := strings.Index(s, "Goal: "), strings.Index(s, "Starting the cluster"); progress < goal {
		tb.Errorf("%s: no start-up progress under the story:\n%s", name, s)
	}
	return story
}

// stoppedCleanly checks the last screen of a podtrace that q ended: it
// said it was stopping the cluster, and exited 0.
func stoppedCleanly(tb testing.TB, name, s string) {
	tb.Helper()
	if !strings.Contains(s, "stopping the cluster…") || !strings.Contains(s, "podtrace exited 0") {
		tb.Errorf("%s: q does not say it is stopping the cluster, or podtrace failed:\n%s", name, s)
	}
}

// BenchmarkScenarioStartStop measures `podtrace scenario crash-loop` from
// process start to its story on the screen (the goal is ≤ 1 s) and from q
// to the process's exit (≤ 2 s); it reports the medians and the worst of
// b.N runs.
//
//	go test ./e2e/tui -run '^$' -bench ScenarioStartStop -benchtime 5x
func BenchmarkScenarioStartStop(b *testing.B) {
	tmuxtest.Need(b)
	bin := podtracebin.Path(b)
	var stories, stops []time.Duration
	for i := 0; i < b.N; i++ {
		story, stop := startStopScenario(b, bin, "crash-loop")
		stories, stops = append(stories, story), append(stops, stop)
	}
	for _, m := range []struct {
		name string
		ds   []time.Duration
	}{{"story", stories}, {"stop", stops}} {
		sort.Slice(m.ds, func(i, j int) bool { return m.ds[i] < m.ds[j] })
		b.ReportMetric(float64(m.ds[len(m.ds)/2].Milliseconds()), m.name+"-median-ms")
		b.ReportMetric(float64(m.ds[len(m.ds)-1].Milliseconds()), m.name+"-max-ms")
	}
}

// appears polls the screen every 5 ms until it holds text and returns it
// with the time since the terminal started.
func appears(tb testing.TB, tm *term, text string, timeout time.Duration) (string, time.Duration) {
	tb.Helper()
	var s string
	var took time.Duration
	waittest.EventuallyEvery(tb, strconv.Quote(text), 5*time.Millisecond, timeout, func() (bool, string) {
		s, took = tm.Screen(), time.Since(tm.Started)
		return strings.Contains(s, text), s
	})
	return s, took
}
