package scheduler

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podtrace/podtrace/engine/enginetest"
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
// concurrency (DefaultBindConcurrency), no filtering or scoring. The ratio
// should be at least 0.8. Run with -benchtime=1x.
func BenchmarkSchedule5000PodsOn500Nodes(b *testing.B) {
	env := enginetest.Start(b)
	admin := env.Admin()
	parallel(benchNodes, 32, func(i int) {
		n := makeNode(fmt.Sprintf("node-%03d", i), "8", "32Gi")
		if _, err := admin.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
			b.Errorf("create node: %v", err)
		}
	})
	schedClient := env.ClientFor(b, User)
	for iter := 0; iter < b.N; iter++ {
		// Bind-only ceiling.
		ceilingPods := benchCreatePods(b, admin, fmt.Sprintf("ceiling-%d", iter), "bench-nobody")
		start := time.Now()
		var bindErr atomic.Value
		parallel(benchPods, DefaultBindConcurrency, func(i int) {
			p := ceilingPods[i]
			err := schedClient.CoreV1().Pods(p.Namespace).Bind(context.Background(), &v1.Binding{
				ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID},
				Target:     v1.ObjectReference{Kind: "Node", Name: fmt.Sprintf("node-%03d", i%benchNodes)},
			}, metav1.CreateOptions{})
			if err != nil {
				bindErr.Store(err)
			}
		})
		ceiling := float64(benchPods) / time.Since(start).Seconds()
		if err, ok := bindErr.Load().(error); ok {
			b.Fatalf("bind-only: %v", err)
		}

		// The scheduler.
		ns := fmt.Sprintf("bench-%d", iter)
		benchCreatePods(b, admin, ns, DefaultSchedulerName)
		sub := env.Hub.Subscribe()
		var bound atomic.Int64
		done := make(chan struct{})
		go func() {
			for e := range sub.C() {
				if e.Namespace == ns && e.Stage == stages.Bind && e.Status == stages.Succeeded {
					if bound.Add(1) == benchPods {
						close(done)
					}
				}
			}
		}()
		ctx, cancel := context.WithCancel(env.Ctx)
		s, err := New(Config{Client: schedClient, Clock: env.Clock, Tracer: env.Tracer, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		if err := s.Start(ctx); err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		select {
		case <-done:
		case <-time.After(5 * time.Minute):
			b.Fatalf("only %d of %d pods bound after 5 minutes", bound.Load(), benchPods)
		}
		elapsed := time.Since(start)
		b.StopTimer()
		cancel()
		sub.Close()
		rate := float64(benchPods) / elapsed.Seconds()
		b.ReportMetric(rate, "pods/s")
		b.ReportMetric(ceiling, "bind-only-pods/s")
		b.ReportMetric(rate/ceiling, "ratio")
		b.ReportMetric(0, "ns/op")
	}
}
