package scheduler

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/podtrace/podtrace/engine/enginetest"
	"github.com/podtrace/podtrace/engine/scheduler/framework"
	"github.com/podtrace/podtrace/engine/scheduler/plugins/names"
	"github.com/podtrace/podtrace/stages"
)

const (
	benchNodes = 500
	benchPods  = 5000
)

// parallel runs f(i) for i in [0, n) on workers goroutines.
func parallel(n, workers int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				f(i)
			}
		}()
	}
	wg.Wait()
}

func benchCreatePods(b *testing.B, c kubernetes.Interface, ns, schedulerName string) []*v1.Pod {
	b.Helper()
	if _, err := c.CoreV1().Namespaces().Create(context.Background(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if _, err := c.CoreV1().ServiceAccounts(ns).Create(context.Background(), &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	pods := make([]*v1.Pod, benchPods)
	var failed atomic.Value
	parallel(benchPods, 64, func(i int) {
		p := makePod(fmt.Sprintf("pod-%d", i), "100m", "128Mi")
		p.Namespace, p.UID, p.Spec.SchedulerName = ns, "", schedulerName
		created, err := c.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
		if err != nil {
			failed.Store(err)
			return
		}
		pods[i] = created
	})
	if err, ok := failed.Load().(error); ok {
		b.Fatalf("create pods: %v", err)
	}
	return pods
}

// BenchmarkSchedule5000PodsOn500Nodes measures the scheduler against the real
// API server: 5,000 pending pods on 500 nodes scheduled and bound (timed from
// the moment the scheduler's caches hold them all, to the last bind), next to
// a bind-only ceiling measured in the same run: 5,000 other pods bound
// round-robin through the same API as system:kube-scheduler with the same
// concurrency (DefaultBindConcurrency), no filtering or scoring, measured
// once before and once after the scheduler (their combined rate is the
// ceiling). The ratio should be at least 0.8. Run with -benchtime=1x;
// Diagnostics: SCHED_WATCHED_CEILING=1 also measures bind-only with a pod
// informer running; SCHED_PLUGINS=NodeName schedules with that filter only.
// SCHED_PROFILE=FILE and CEILING_PROFILE=FILE write CPU profiles of the phases;
// SCHED_MEMPROFILE=FILE writes allocation profiles at the scheduler phase's
// start (FILE.before) and end (FILE): pprof -diff_base FILE.before FILE.
func BenchmarkSchedule5000PodsOn500Nodes(b *testing.B) {
	// No recording of every event: a harness's memory, not the scheduler's.
	env := enginetest.Start(b, enginetest.Options{NoRecording: true})
	admin := env.Admin()
	parallel(benchNodes, 32, func(i int) {
		n := makeNode(fmt.Sprintf("node-%03d", i), "8", "32Gi")
		if _, err := admin.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
			b.Errorf("create node: %v", err)
		}
	})
	// Both phases use the same client: protobuf, as kube-scheduler's is.
	cfg := env.RestConfigFor(b, User)
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cfg.QPS, cfg.Burst = -1, 0
	schedClient := kubernetes.NewForConfigOrDie(cfg)
	for iter := 0; iter < b.N; iter++ {
		// Bind-only ceiling, measured before and after the scheduler so that
		// load changes on a shared machine hit both sides alike.
		before := benchBindOnly(b, admin, schedClient, fmt.Sprintf("ceiling-a-%d", iter))

		// The scheduler.
		ns := fmt.Sprintf("bench-%d", iter)
		benchCreatePods(b, admin, ns, DefaultSchedulerName)
		sub := env.Hub.Subscribe()
		var bound atomic.Int64
		var lastScheduled atomic.Int64
		done := make(chan struct{})
		go func() {
			for e := range sub.C() {
				if e.Namespace == ns && e.Stage == stages.Schedule && e.Status == stages.Succeeded {
					lastScheduled.Store(time.Now().UnixNano())
				}
				if e.Namespace == ns && e.Stage == stages.Bind && e.Status == stages.Succeeded {
					if bound.Add(1) == benchPods {
						close(done)
					}
				}
			}
		}()
		ctx, cancel := context.WithCancel(env.Ctx)
		s, err := New(Config{Client: schedClient, Clock: env.Clock, Tracer: env.Tracer, Seed: 1, Plugins: benchPlugins()})
		if err != nil {
			b.Fatal(err)
		}
		writeAllocs("SCHED_MEMPROFILE", ".before")
		b.ResetTimer()
		if err := s.Start(ctx); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		profiling := startProfile("SCHED_PROFILE")
		select {
		case <-done:
		case <-time.After(5 * time.Minute):
			b.Fatalf("only %d of %d pods bound after 5 minutes", bound.Load(), benchPods)
		}
		elapsed := time.Since(start)
		b.StopTimer()
		if profiling {
			pprof.StopCPUProfile()
		}
		writeAllocs("SCHED_MEMPROFILE", "")
		if evs, err := admin.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{}); err == nil {
			var total int32
			for _, e := range evs.Items {
				total += e.Count
			}
			b.Logf("events in %s at the end: %d objects, count %d", ns, len(evs.Items), total)
		}
		cancel()
		sub.Close()
		after := benchBindOnly(b, admin, schedClient, fmt.Sprintf("ceiling-b-%d", iter))
		ceiling := 2 * float64(benchPods) / (before + after).Seconds()
		b.Logf("scheduler: last pod scheduled after %v, last bound after %v; bind-only took %v before and %v after",
			time.Unix(0, lastScheduled.Load()).Sub(start), elapsed, before, after)
		rate := float64(benchPods) / elapsed.Seconds()
		if os.Getenv("SCHED_WATCHED_CEILING") != "" {
			// Diagnostic, not the ceiling: bind-only while one pod
			// informer watches, as the scheduler's own must.
			watched := benchBindOnlyWatched(b, admin, schedClient, fmt.Sprintf("ceiling-w-%d", iter))
			b.ReportMetric(float64(benchPods)/watched.Seconds(), "bind-only-watched-pods/s")
		}
		b.ReportMetric(rate, "pods/s")
		b.ReportMetric(ceiling, "bind-only-pods/s")
		b.ReportMetric(rate/ceiling, "ratio")
		b.ReportMetric(0, "ns/op")
	}
}

// benchBindOnly creates benchPods pods nobody schedules in namespace ns and
// binds them round-robin to the nodes with DefaultBindConcurrency workers,
// returning how long the binds took.
func benchBindOnly(b *testing.B, admin, c kubernetes.Interface, ns string) time.Duration {
	b.Helper()
	pods := benchCreatePods(b, admin, ns, "bench-nobody")
	start := time.Now()
	if startProfile("CEILING_PROFILE") {
		defer pprof.StopCPUProfile()
	}
	var bindErr atomic.Value
	parallel(benchPods, DefaultBindConcurrency, func(i int) {
		p := pods[i]
		err := c.CoreV1().Pods(p.Namespace).Bind(context.Background(), &v1.Binding{
			ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID},
			Target:     v1.ObjectReference{Kind: "Node", Name: fmt.Sprintf("node-%03d", i%benchNodes)},
		}, metav1.CreateOptions{})
		if err != nil {
			bindErr.Store(err)
		}
	})
	d := time.Since(start)
	if err, ok := bindErr.Load().(error); ok {
		b.Fatalf("bind-only: %v", err)
	}
	return d
}

// benchBindOnlyWatched is benchBindOnly with a pod informer of c's running
// throughout, as the scheduler's informer runs while it binds.
func benchBindOnlyWatched(b *testing.B, admin, c kubernetes.Interface, ns string) time.Duration {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := informers.NewSharedInformerFactory(c, 0)
	inf := f.Core().V1().Pods().Informer()
	f.Start(ctx.Done())
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		b.Fatal("pod informer did not sync")
	}
	return benchBindOnly(b, admin, c, ns)
}

// benchPlugins is the default plugin set, or with SCHED_PLUGINS=NodeName
// only that filter (a diagnostic: the scheduler's machinery without the
// algorithm's filtering and scoring).
func benchPlugins() []framework.PluginConfig {
	if os.Getenv("SCHED_PLUGINS") == "NodeName" {
		return []framework.PluginConfig{{Name: names.NodeName}}
	}
	return DefaultPlugins()
}

// startProfile starts a CPU profile into the file named by the environment
// variable env, if set (SCHED_PROFILE: the scheduler phase; CEILING_PROFILE:
// the bind-only phases).
func startProfile(env string) bool {
	f := os.Getenv(env)
	if f == "" {
		return false
	}
	pf, err := os.Create(f)
	if err != nil {
		return false
	}
	return pprof.StartCPUProfile(pf) == nil
}

// writeAllocs writes the allocation profile so far to the file named by the
// environment variable env, with suffix appended, if env is set.
func writeAllocs(env, suffix string) {
	f := os.Getenv(env)
	if f == "" {
		return
	}
	pf, err := os.Create(f + suffix)
	if err != nil {
		return
	}
	defer pf.Close()
	_ = pprof.Lookup("allocs").WriteTo(pf, 0)
}
