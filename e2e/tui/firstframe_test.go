package tuie2e

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/podtrace/podtrace/internal/podtracebin"
	"github.com/podtrace/podtrace/internal/tmuxtest"
)

// firstFrame starts podtrace (embedded etcd, a fresh data dir) in tmux and
// returns how long it took from launching the process to the UI's first
// frame on the screen (the header line), polling the pane every 5 ms.
func firstFrame(tb testing.TB, bin string) time.Duration {
	tb.Helper()
	tm := startTerm(tb, 120, 40, bin, "--data-dir", tb.TempDir())
	deadline := tm.Started.Add(time.Minute)
	for {
		s := tm.Screen()
		if strings.Contains(s, "podtrace │ embedded") {
			d := time.Since(tm.Started)
			assertNoLogs(tb, s)
			tm.Keys("q")
			tm.WaitFor("podtrace to exit", 30*time.Second, tmuxtest.Has("podtrace exited 0"))
			return d
		}
		if time.Now().After(deadline) {
			tb.Fatalf("no first frame after a minute; screen:\n%s", s)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// BenchmarkStartToFirstFrame measures process start to the first frame drawn
// in tmux with the embedded etcd (the goal is ≤ 1 s); it reports the median
// and the worst of b.N starts.
//
//	go test ./e2e/tui -run '^$' -bench StartToFirstFrame -benchtime 10x
func BenchmarkStartToFirstFrame(b *testing.B) {
	tmuxtest.Need(b)
	bin := podtracebin.Path(b)
	var ds []time.Duration
	for i := 0; i < b.N; i++ {
		ds = append(ds, firstFrame(b, bin))
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	b.ReportMetric(float64(ds[len(ds)/2].Milliseconds()), "median-ms")
	b.ReportMetric(float64(ds[len(ds)-1].Milliseconds()), "max-ms")
}
