package tui

import (
	"sort"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/podtrace/podtrace/stages"
)

// manyPods builds n pods in 50 Deployments, at every stage of their lives:
// most Running, some pulling (spinner), some in back-off (countdown).
func manyPods(n int) []stages.Event {
	evs := make([]stages.Event, 0, n*30)
	for d := 0; d < 50; d++ {
		dep := "app" + itoa(d)
		rs := dep + "-5f6d8c7b9"
		for _, o := range []struct{ kind, name string }{{stages.KindDeployment, dep}, {stages.KindReplicaSet, rs}} {
			for _, id := range []stages.ID{stages.Authn, stages.Authz, stages.Admission, stages.Persist, stages.Reconcile} {
				evs = append(evs, stages.Event{Time: t0, Kind: o.kind, Namespace: "bench", Pod: o.name, Stage: id, Status: stages.Succeeded, DurationMs: 1})
			}
		}
	}
	next := t0.Add(time.Minute)
	for i := 0; i < n; i++ {
		pod := "app" + itoa(i%50) + "-5f6d8c7b9-" + itoa(10000+i)
		last := len(stages.Lifecycle)
		switch i % 10 {
		case 7:
			last = stages.Pull.Index()
		case 8:
			last = stages.Schedule.Index()
		}
		for j, id := range stages.Lifecycle[:last] {
			at := t0.Add(time.Duration(i*20+j) * time.Millisecond)
			evs = append(evs, stages.Event{Time: at, Namespace: "bench", Pod: pod, Node: "node-" + itoa(i%3), Stage: id, Status: stages.Started},
				stages.Event{Time: at, Namespace: "bench", Pod: pod, Node: "node-" + itoa(i%3), Stage: id, Status: stages.Succeeded, DurationMs: 3})
		}
		if last < len(stages.Lifecycle) {
			id := stages.Lifecycle[last]
			st := stages.Started
			if i%20 == 8 {
				st = stages.Retrying
			}
			evs = append(evs, stages.Event{Time: t0, Namespace: "bench", Pod: pod, Stage: id, Status: st, Attempt: 2, Reason: "BackOff", NextTry: &next})
		}
	}
	return evs
}

// BenchmarkView5000Pods measures View() with 5,000 pods tracked, moving the
// selection and the clock every frame as a user watching would; it reports
// the 99th percentile in ms (the goal is ≤ 4 ms).
func BenchmarkView5000Pods(b *testing.B) {
	for _, size := range [][2]int{{120, 40}, {200, 60}} {
		b.Run(itoa(size[0])+"x"+itoa(size[1]), func(b *testing.B) {
			wall := t0
			src := &FakeSource{SourceName: "bench", ClockControl: &FakeClock{Rate: 1}}
			m := New(src, Options{Now: func() time.Time { return wall }})
			m.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
			m.Fold(manyPods(5000)...)
			if m.store.Len() < 5000 {
				b.Fatalf("tracking %d lanes", m.store.Len())
			}
			m.Render() // first frame builds the rows
			times := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				wall = wall.Add(frameInterval)
				if i%5 == 0 {
					m.move(1 + i%7)
				}
				start := time.Now()
				v := m.View()
				times = append(times, time.Since(start))
				if v.Content == "" {
					b.Fatal("empty view")
				}
			}
			b.StopTimer()
			sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
			p99 := times[len(times)*99/100]
			b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
		})
	}
}
