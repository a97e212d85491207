package kubelet_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/engine/enginetest"
	"github.com/podtrace/podtrace/engine/kubelet"
	"github.com/podtrace/podtrace/engine/kubelet/nodes"
	rtsim "github.com/podtrace/podtrace/engine/kubelet/runtime/sim"
	"github.com/podtrace/podtrace/stages"
)

// BenchmarkPodsToReady binds pods straight to nodes (no scheduler) with
// zero runtime latency and measures how fast the kubelets take them to
// Ready and how many pods/status writes each pod costs.
// Run: go test -run x -bench PodsToReady -benchtime 1x ./engine/kubelet/; set
// PODTRACE_BENCH_NODES and PODTRACE_BENCH_PODS for another size.
func BenchmarkPodsToReady(b *testing.B) {
	sizes := []struct{ nodes, pods int }{{10, 200}, {50, 1000}}
	if n, p := os.Getenv("PODTRACE_BENCH_NODES"), os.Getenv("PODTRACE_BENCH_PODS"); n != "" && p != "" {
		nn, _ := strconv.Atoi(n)
		pp, _ := strconv.Atoi(p)
		sizes = []struct{ nodes, pods int }{{nn, pp}}
	}
	for _, size := range sizes {
		b.Run(fmt.Sprintf("nodes=%d/pods=%d", size.nodes, size.pods), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				runPodsToReady(b, size.nodes, size.pods)
			}
		})
	}
}

func runPodsToReady(b *testing.B, nNodes, nPods int) {
	env := enginetest.Start(b, enginetest.Options{Speed: 1})
	admin := env.Admin()
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: "default"}}
	if _, err := admin.CoreV1().ConfigMaps("default").Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	var kubelets []*kubelet.Kubelet
	zero := rtsim.ZeroLatency
	for i, spec := range nodes.Defaults(nNodes) {
		k, err := kubelet.New(kubelet.Config{
			Client:   env.ClientFor(b, "system:node:"+spec.Name, "system:nodes"),
			NodeName: spec.Name, Clock: env.Clock, Tracer: env.Tracer, PodCIDR: nodes.PodCIDR(i), Capacity: spec.Capacity,
			Runtime: rtsim.New(rtsim.Config{Clock: env.Clock, Latency: &zero, Node: spec.Name}),
		})
		if err != nil {
			b.Fatal(err)
		}
		if err := k.Start(env.Ctx); err != nil {
			b.Fatal(err)
		}
		kubelets = append(kubelets, k)
	}
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := 0; i < nPods; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%d", i), Namespace: "default"},
				Spec: v1.PodSpec{NodeName: fmt.Sprintf("node-%d", i%nNodes+1),
					Containers: []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}
			env.Tracer.Emit(stages.Event{Namespace: "default", Pod: p.Name, Stage: stages.Bind, Status: stages.Succeeded, Node: p.Spec.NodeName})
			if _, err := admin.CoreV1().Pods("default").Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
				b.Error(err)
			}
		}(i)
	}
	wg.Wait()
	enginetest.WaitFor(b, 10*time.Minute, "all pods Ready", func() bool {
		list, err := admin.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false
		}
		ready := 0
		for i := range list.Items {
			if podReady(&list.Items[i]) {
				ready++
			}
		}
		return ready == nPods
	})
	elapsed := time.Since(start)
	b.StopTimer()
	var writes int64
	for _, k := range kubelets {
		writes += k.StatusWrites()
		if e := k.StatusError(); e != "" {
			b.Logf("%s: %s", k.NodeName(), e)
		}
	}
	b.ReportMetric(elapsed.Seconds(), "s-to-ready")
	b.ReportMetric(float64(nPods)/elapsed.Seconds(), "pods/s")
	b.ReportMetric(float64(writes)/float64(nPods), "status-writes/pod")
}
