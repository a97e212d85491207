package engine_test

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/cri"
	"github.com/podtrace/podtrace/engine/logs"
	"github.com/podtrace/podtrace/engine/nodes"
	"github.com/podtrace/podtrace/internal/waittest"
	"github.com/podtrace/podtrace/stages"
)

// BenchmarkTracingLatency measures what tracing costs one pod: create →
// Ready of BENCH_PODS pods (100), BENCH_INFLIGHT created at a time (10),
// on BENCH_NODES real kubelets (3) whose simulated runtime's latencies are
// scaled down to almost nothing, with every seam on and a reader draining
// the events (as the UI does), then on the same components with the seams
// off (engine.Config.Untraced). After a small warm-up run, BENCH_ROUNDS
// (2) runs the two in turn, each on a fresh cluster, and pools each
// mode's samples. A pod's latency runs from just before its create request
// to the moment a watch sees it Ready. It reports p50 and p99 of both and their ratios (target ≤ 1.05),
// the process CPU per pod of both, and logs each run's figures and, traced,
// the median duration of each stage: where the time goes. Run with
// -benchtime=1x.
func BenchmarkTracingLatency(b *testing.B) {
	logs.To(io.Discard)
	pods, inflight := envInt("BENCH_PODS", 100), envInt("BENCH_INFLIGHT", 10)
	nodeCount, rounds := envInt("BENCH_NODES", 3), envInt("BENCH_ROUNDS", 2)
	for i := 0; i < b.N; i++ {
		var traced, untraced []time.Duration
		var events int
		var tracedCPU, untracedCPU float64
		// The process's first cluster pays for warming the process up
		// (caches, heap growth): a small run first, not counted.
		latencyRun(b, min(pods, 20), inflight, nodeCount, true)
		for r := 0; r < rounds; r++ {
			// Traced, untraced, then untraced, traced: neither mode always
			// runs on the process's first cluster.
			for _, off := range []bool{r%2 == 1, r%2 == 0} {
				var run latencyResult
				// Labelled, so that a CPU profile (-cpuprofile) splits by
				// mode: go tool pprof -tagfocus mode=traced.
				pprof.Do(context.Background(), pprof.Labels("mode", modeName(off)), func(context.Context) {
					run = latencyRun(b, pods, inflight, nodeCount, off)
				})
				if off {
					untraced, untracedCPU = append(untraced, run.latencies...), untracedCPU+run.cpu
				} else {
					traced, events, tracedCPU = append(traced, run.latencies...), events+run.events, tracedCPU+run.cpu
				}
			}
		}
		ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
		tp50, tp99 := percentile(traced, 0.50), percentile(traced, 0.99)
		up50, up99 := percentile(untraced, 0.50), percentile(untraced, 0.99)
		b.ReportMetric(ms(tp50), "traced-p50-ms")
		b.ReportMetric(ms(tp99), "traced-p99-ms")
		b.ReportMetric(ms(up50), "untraced-p50-ms")
		b.ReportMetric(ms(up99), "untraced-p99-ms")
		b.ReportMetric(float64(tp50)/float64(up50), "p50-ratio")
		b.ReportMetric(float64(tp99)/float64(up99), "p99-ratio")
		b.ReportMetric(float64(events)/float64(len(traced)), "events/pod")
		b.ReportMetric(tracedCPU*1000/float64(len(traced)), "traced-cpu-ms/pod")
		b.ReportMetric(untracedCPU*1000/float64(len(untraced)), "untraced-cpu-ms/pod")
	}
}

func modeName(untraced bool) string {
	if untraced {
		return "untraced"
	}
	return "traced"
}

// latencyResult is one run's create → Ready latency of each pod, the
// process CPU seconds from the first create to the last pod Ready, and
// how many stage events the reader received.
type latencyResult struct {
	latencies []time.Duration
	cpu       float64
	events    int
}

// latencyRun starts a cluster, traced or not, creates pods pods with at
// most inflight create requests at a time, and measures them.
func latencyRun(b *testing.B, pods, inflight, nodeCount int, untraced bool) latencyResult {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := os.MkdirTemp("", "podtrace-bench-") // not b.TempDir: see deploymentRun
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	e, err := engine.Start(ctx, engine.Config{DataDir: dir, Nodes: nodes.Defaults(nodeCount), Speed: cri.MaxSpeed,
		Seed: 1, UnsafeNoFsync: true, Untraced: untraced})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	waitNodes(b, e, nodeCount)
	var events atomic.Int64
	var durations sync.Map // stage → *stageDurations
	if !untraced {
		sub := e.Hub.Subscribe()
		defer sub.Close()
		go func() {
			for ev := range sub.C() {
				events.Add(1)
				if ev.Kind == stages.KindPod && ev.Status == stages.Succeeded {
					d, _ := durations.LoadOrStore(ev.Stage, &stageDurations{})
					d.(*stageDurations).add(time.Duration(ev.DurationMs * float64(time.Millisecond)))
				}
			}
		}()
	}
	ready := watchReady(ctx, b, e)
	cpu0 := cpuSeconds()
	created := make([]time.Time, pods)
	admin := e.AdminClient()
	work := make(chan int)
	var wg sync.WaitGroup
	for range inflight {
		wg.Go(func() {
			for i := range work {
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("lat-%d", i), Namespace: "default"},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}}}
				created[i] = time.Now()
				if _, err := admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
					b.Error(err)
				}
			}
		})
	}
	for i := range pods {
		work <- i
	}
	close(work)
	wg.Wait()
	at := ready.wait(b, pods, 5*time.Minute)
	cpu := cpuSeconds() - cpu0
	out := make([]time.Duration, pods)
	for i := range out {
		out[i] = at[fmt.Sprintf("lat-%d", i)].Sub(created[i])
	}
	b.Logf("%s, %d pods: p50 %v, p99 %v, %.1f ms CPU/pod", modeName(untraced), pods, percentile(out, 0.5).Round(time.Millisecond),
		percentile(out, 0.99).Round(time.Millisecond), cpu*1000/float64(pods))
	if !untraced {
		var parts []string
		for _, st := range stages.Lifecycle {
			if d, ok := durations.Load(st); ok {
				parts = append(parts, fmt.Sprintf("%s %v", st, d.(*stageDurations).median().Round(100*time.Microsecond)))
			}
		}
		b.Logf("stage medians: %s", strings.Join(parts, ", "))
	}
	return latencyResult{latencies: out, cpu: cpu, events: int(events.Load())}
}

// stageDurations collects one stage's durations.
type stageDurations struct {
	mu sync.Mutex
	ds []time.Duration
}

func (s *stageDurations) add(d time.Duration) {
	s.mu.Lock()
	s.ds = append(s.ds, d)
	s.mu.Unlock()
}

func (s *stageDurations) median() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return percentile(s.ds, 0.5)
}

// readyTimes records when a watch first sees each pod Ready.
type readyTimes struct {
	mu sync.Mutex
	at map[string]time.Time
}

func watchReady(ctx context.Context, b *testing.B, e *engine.Engine) *readyTimes {
	r := &readyTimes{at: map[string]time.Time{}}
	f := informers.NewSharedInformerFactoryWithOptions(e.AdminClient(), 0, informers.WithNamespace("default"))
	inf := f.Core().V1().Pods().Informer()
	see := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok && isReady(p) {
			now := time.Now()
			r.mu.Lock()
			if _, seen := r.at[p.Name]; !seen {
				r.at[p.Name] = now
			}
			r.mu.Unlock()
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: see, UpdateFunc: func(_, o any) { see(o) }}); err != nil {
		b.Fatal(err)
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		b.Fatal("pod informer did not sync")
	}
	return r
}

// wait returns when n pods have been seen Ready, failing after timeout.
func (r *readyTimes) wait(b *testing.B, n int, timeout time.Duration) map[string]time.Time {
	waittest.EventuallyEvery(b, fmt.Sprintf("%d Ready pods", n), 10*time.Millisecond, timeout, func() (bool, string) {
		r.mu.Lock()
		got := len(r.at)
		r.mu.Unlock()
		return got >= n, fmt.Sprintf("%d Ready", got)
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.at)
}

// percentile returns the q-quantile of ds by nearest rank.
func percentile(ds []time.Duration, q float64) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}
