// Package tuie2e drives the real podtrace binary in a real terminal (tmux)
// and asserts on what a user would read on the screen.
package tuie2e

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/podtrace/podtrace/internal/tmuxtest"
)

// term is a tmux session running podtrace.
type term = tmuxtest.Term

// clustersAtOnce bounds the podtrace clusters the package's tests run at
// once: the tests run in parallel, and mostly wait on what the screen
// shows, but each cluster's start-up burns CPU (2 cores). With four, and
// go test running another package's clusters alongside, CI once saw three
// starts take over a minute.
const clustersAtOnce = 3

// clusterStart bounds the wait for a cluster to start (etcd, the control
// plane, three Ready nodes) or for a scenario to break it: under CI's load a
// start has taken over a minute. How fast podtrace starts is measured by
// benchmarks (BenchmarkStartToFirstFrame, the peer in docs/benchmarks.md),
// not by this bound.
const clusterStart = 3 * time.Minute

// clusterSlots holds one token per cluster running.
var clusterSlots = make(chan struct{}, clustersAtOnce)

// parallelCluster runs t in parallel with the package's other tests, once
// one of the clustersAtOnce slots is free; the slot is freed when t ends.
func parallelCluster(t *testing.T) {
	t.Helper()
	t.Parallel()
	clusterSlots <- struct{}{}
	t.Cleanup(func() { <-clusterSlots })
}

// startTerm runs argv in a new detached tmux session of w×h cells. When the
// command exits the pane prints "podtrace exited N" and stays open.
func startTerm(tb testing.TB, w, h int, argv ...string) *term {
	tb.Helper()
	return tmuxtest.Start(tb, w, h, nil, tmuxtest.Quote(argv...)+`; echo "podtrace exited $?"; exec sleep 600`)
}

// logLine matches what the libraries would print if their logs leaked: klog
// headers (I1121 20:55:47.123456 ...), etcd's and zap's JSON lines, Go's log
// timestamps, and panics.
var logLine = regexp.MustCompile(`(?m)^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+|"level":"|"logger":"|etcdserver|raft|^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d |goroutine \d+ \[|panic:`)

// assertNoLogs fails when anything on the screen looks like a library log line.
func assertNoLogs(tb testing.TB, screen string) {
	tb.Helper()
	if m := logLine.FindString(screen); m != "" {
		tb.Fatalf("a log line reached the terminal (%q):\n%s", m, screen)
	}
}

// lineWith returns the first screen line containing sub.
func lineWith(screen, sub string) string {
	for _, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

// selectedLane returns the lane line that carries the selection cursor.
func selectedLane(screen string) string {
	for _, l := range strings.Split(screen, "\n") {
		if strings.HasPrefix(l, "▶") {
			return l
		}
	}
	return ""
}

// applyWorkload opens the apply picker with a, walks its cursor to the named
// built-in workload and applies it.
func applyWorkload(tb testing.TB, tm *term, name string) {
	tb.Helper()
	tm.Keys("a")
	s := tm.WaitFor("the workload picker", 10*time.Second, tmuxtest.Has("Pick a workload"))
	cursor, want := -1, -1
	for i, l := range strings.Split(s, "\n") {
		_, inner, ok := strings.Cut(l, "│")
		if !ok {
			continue
		}
		inner = strings.TrimSpace(inner)
		if strings.HasPrefix(inner, "▶") {
			cursor = i
			inner = strings.TrimSpace(strings.TrimPrefix(inner, "▶"))
		}
		if f := strings.Fields(inner); len(f) > 0 && f[0] == name {
			want = i
		}
	}
	if cursor < 0 || want < cursor {
		tb.Fatalf("no workload %q below the picker's cursor:\n%s", name, s)
	}
	for i := cursor; i < want; i++ {
		tm.Keys("j")
	}
	tm.WaitFor("the cursor on "+name, 5*time.Second, func(s string) bool {
		for _, l := range strings.Split(s, "\n") {
			if strings.Contains(l, "│ ▶ "+name+" ") {
				return true
			}
		}
		return false
	})
	tm.Keys("Enter")
	tm.WaitFor("the workload applied", 30*time.Second, tmuxtest.Has("applied workload "+name))
}
