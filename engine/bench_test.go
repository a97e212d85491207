package engine_test

import (
	"context"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/cri"
	"github.com/podtrace/podtrace/engine/enginetest"
	"github.com/podtrace/podtrace/engine/logs"
	"github.com/podtrace/podtrace/engine/nodes"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkDeploymentReady runs a 1,000-replica Deployment on 100 real
// kubelets, their simulated runtime's latency model scaled down to almost
// nothing, until every pod is Ready, twice in one process: on the upstream
// control plane with podtrace's seams, then on the same components without
// them. It reports each run's pods/s and process CPU per pod, their ratio
// (the seams' cost), and the peak RSS. BENCH_PODS and BENCH_NODES change
// the size; BENCH_RUN=hooked or BENCH_RUN=plain runs only that one, so the
// two can be compared from separate processes (in one, the first
// cluster's 100 kubelets still wind down while the second runs);
// BENCH_HEAP=file writes a heap profile once every pod is Ready. Run with
// -benchtime=1x.
func BenchmarkDeploymentReady(b *testing.B) {
	logs.To(io.Discard)
	pods, nodeCount := envInt("BENCH_PODS", 1000), envInt("BENCH_NODES", 100)
	only := os.Getenv("BENCH_RUN")
	for i := 0; i < b.N; i++ {
		var hooked, plain runResult
		if only != "plain" {
			hooked = deploymentRun(b, pods, nodeCount, false)
			b.ReportMetric(hooked.podsPerSec, "pods/s")
			b.ReportMetric(hooked.cpuPerPod*1000, "cpu-ms/pod")
			b.ReportMetric(hooked.peakRSS, "peak-RSS-MiB")
		}
		if only != "hooked" {
			plain = deploymentRun(b, pods, nodeCount, true)
			b.ReportMetric(plain.podsPerSec, "plain-pods/s")
			b.ReportMetric(plain.cpuPerPod*1000, "plain-cpu-ms/pod")
			b.ReportMetric(plain.peakRSS, "plain-peak-RSS-MiB")
		}
		if only == "" {
			b.ReportMetric(hooked.cpuPerPod/plain.cpuPerPod, "cpu-ratio")
		}
	}
}

type runResult struct{ podsPerSec, cpuPerPod, peakRSS float64 }

// deploymentRun starts a cluster, waits for its nodes, and times one
// Deployment from create to every replica Ready. Its peak RSS is the
// cluster's own: the previous run's memory is returned to the OS and the
// peak reset first.
func deploymentRun(b *testing.B, pods, nodeCount int, plain bool) runResult {
	resetPeakRSS()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := os.MkdirTemp("", "podtrace-bench-")
	if err != nil {
		b.Fatal(err)
	}
	defer enginetest.RemoveDataDir(dir) // after Close, waiting out the kubelets' late writes
	cfg := engine.Config{DataDir: dir, Nodes: nodes.Defaults(nodeCount), Speed: cri.MaxSpeed, Seed: 1,
		UnsafeNoFsync: true, PlainControlPlane: plain}
	e, err := engine.Start(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	admin := e.AdminClient()
	waitNodes(b, e, nodeCount)
	cpu0, start := cpuSeconds(), time.Now()
	if _, err := admin.AppsV1().Deployments("default").Create(ctx, deployment("bench", int32(pods)), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	// As `kubectl rollout status` does, follow the Deployment's status
	// rather than list the pods again and again.
	for ready := int32(0); ready < int32(pods); {
		time.Sleep(50 * time.Millisecond)
		d, err := admin.AppsV1().Deployments("default").Get(ctx, "bench", metav1.GetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		ready = d.Status.ReadyReplicas
		if time.Since(start) > 10*time.Minute {
			b.Fatalf("only %d of %d pods Ready after 10 minutes", ready, pods)
		}
	}
	elapsed, cpu := time.Since(start), cpuSeconds()-cpu0
	if path := os.Getenv("BENCH_HEAP"); path != "" {
		writeHeapProfile(b, path)
	}
	if n := readyPods(b, admin, "bench"); n != pods {
		b.Fatalf("the Deployment says %d pods are ready, the pods say %d", pods, n)
	}
	return runResult{podsPerSec: float64(pods) / elapsed.Seconds(), cpuPerPod: cpu / float64(pods), peakRSS: peakRSSMiB()}
}

// BenchmarkStart times engine.Start (etcd, kube-apiserver ready,
// kube-controller-manager and kube-scheduler running, the default service
// account in place) and then 3 nodes Ready, on a fresh data dir.
func BenchmarkStart(b *testing.B) {
	logs.To(io.Discard)
	var apiReady, nodesReady []float64
	for i := 0; i < b.N; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		start := time.Now()
		e, err := engine.Start(ctx, engine.Config{DataDir: enginetest.DataDir(b), Nodes: nodes.Defaults(3), Speed: 1, Seed: 1})
		if err != nil {
			cancel()
			b.Fatal(err)
		}
		apiReady = append(apiReady, time.Since(start).Seconds())
		waitNodes(b, e, 3)
		nodesReady = append(nodesReady, time.Since(start).Seconds())
		cancel()
		e.Close()
	}
	b.ReportMetric(median(apiReady), "s-to-control-plane")
	b.ReportMetric(median(nodesReady), "s-to-3-nodes-Ready")
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// cpuSeconds is the process's user and system CPU time so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
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

// waitNodes waits until the engine's n nodes are Ready.
func waitNodes(b testing.TB, e *engine.Engine, n int) {
	if got := e.NodeCount(); got != n {
		b.Fatalf("the engine runs %d nodes, want %d", got, n)
	}
	if err := e.WaitNodesReady(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// writeHeapProfile writes the live heap, with every pod Ready and the
// cluster still running, to path (BENCH_HEAP=path): where the peak RSS
// goes.
func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}

// resetPeakRSS returns freed memory to the OS and resets the process's peak
// resident set size to what it holds now (Linux: clear_refs 5).
func resetPeakRSS() {
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
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
