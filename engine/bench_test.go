package engine_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/clock"
	"github.com/podtrace/podtrace/engine/kubelet/nodes"
	"github.com/podtrace/podtrace/engine/kubelet/runtime"
	"github.com/podtrace/podtrace/engine/kubelet/runtime/sim"
	"github.com/podtrace/podtrace/engine/logs"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkDeploymentReady runs a 10,000-replica Deployment on 500 nodes with
// a zero-latency runtime until every pod is Ready, and compares its pods/s
// with raw etcd Put throughput (64 writers, same fsync setting, same run)
// divided by the etcd writes each pod cost. It also reports peak RSS.
// BENCH_PODS and BENCH_NODES shrink it. Run with -benchtime=1x.
func BenchmarkDeploymentReady(b *testing.B) {
	logs.To(io.Discard)
	pods, nodeCount := envInt("BENCH_PODS", 10000), envInt("BENCH_NODES", 500)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, err := engine.Start(ctx, engine.Config{DataDir: b.TempDir(), Nodes: nodes.Defaults(nodeCount), Speed: 1, Seed: 1,
		UnsafeNoFsync: os.Getenv("BENCH_NOFSYNC") != "",
		NewRuntime: func(node string, clk *clock.Clock, seed int64) runtime.Runtime {
			return sim.New(sim.Config{Clock: clk, Latency: &sim.ZeroLatency, Seed: seed, Node: node})
		}})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	admin := e.AdminClient()
	waitNodes(b, e, nodeCount)
	for i := 0; i < b.N; i++ {
		name := fmt.Sprintf("bench-%d", i)
		// The raw-Put baseline is measured in this process with the nodes up
		// and before the pods: after them, the heap sits near the engine's
		// soft memory limit and the GC would slow the baseline too, which
		// would flatter the ratio.
		putsPerSec := rawPuts(b, e, 20000)
		before := etcdRev(b, e)
		start := time.Now()
		if _, err := admin.AppsV1().Deployments("default").Create(ctx, deployment(name, int32(pods)), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		// As `kubectl rollout status` does, follow the Deployment's status
		// rather than list 10,000 pods again and again: the benchmark must
		// not be a big part of the load it measures.
		for ready := int32(0); ready < int32(pods); {
			time.Sleep(50 * time.Millisecond)
			d, err := admin.AppsV1().Deployments("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				b.Fatal(err)
			}
			ready = d.Status.ReadyReplicas
			if time.Since(start) > 20*time.Minute {
				b.Fatalf("only %d of %d pods Ready after 20 minutes", ready, pods)
			}
		}
		elapsed := time.Since(start)
		if n := readyPods(b, admin, name); n != pods {
			b.Fatalf("the Deployment says %d pods are ready, the pods say %d", pods, n)
		}
		writes := float64(etcdRev(b, e)-before) / float64(pods)
		podsPerSec := float64(pods) / elapsed.Seconds()
		b.ReportMetric(elapsed.Seconds(), "s-to-ready")
		b.ReportMetric(podsPerSec, "pods/s")
		b.ReportMetric(writes, "etcd-writes/pod")
		b.ReportMetric(putsPerSec, "etcd-puts/s")
		b.ReportMetric(podsPerSec/(putsPerSec/writes), "ratio")
		b.ReportMetric(peakRSSMiB(), "peak-RSS-MiB")
	}
}

// readyPods counts the Deployment's pods whose Ready condition is True.
func readyPods(b *testing.B, c kubernetes.Interface, app string) int {
	list, err := c.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app, ResourceVersion: "0"})
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for i := range list.Items {
		if isReady(&list.Items[i]) {
			n++
		}
	}
	return n
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func waitNodes(b testing.TB, e *engine.Engine, n int) {
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		list, err := e.AdminClient().CoreV1().Nodes().List(context.Background(), metav1.ListOptions{ResourceVersion: "0"})
		ready := 0
		if err == nil {
			for _, node := range list.Items {
				for _, c := range node.Status.Conditions {
					if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
						ready++
					}
				}
			}
		}
		if ready == n {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.Fatalf("nodes not Ready")
}

func etcdRev(b *testing.B, e *engine.Engine) int64 {
	resp, err := e.Etcd.Client.Get(context.Background(), "/bench/rev")
	if err != nil {
		b.Fatal(err)
	}
	return resp.Header.Revision
}

// rawPuts measures etcd Put throughput with 64 writers of pod-sized values.
func rawPuts(b *testing.B, e *engine.Engine, n int) float64 {
	value := strings.Repeat("x", 1500)
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < 64; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := next.Add(1); j <= int64(n); j = next.Add(1) {
				if _, err := e.Etcd.Client.Put(context.Background(), fmt.Sprintf("/bench/raw/%d", j), value); err != nil {
					panic(err)
				}
			}
		}()
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds()
}

// peakRSSMiB reads the process's peak resident set size (VmHWM).
func peakRSSMiB() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}
