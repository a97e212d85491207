package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	nodeutil "k8s.io/kubernetes/pkg/util/node"

	"github.com/podtrace/podtrace/internal/podtracebin"
)

// BenchmarkServeToNodesReady times what a user waits for: from exec of
// `podtrace serve` (the default: the real kubelet, in its pod network
// namespace on Linux) on a fresh data dir to 3 nodes Ready, seen from the
// host through the kubeconfig it writes. It reports the median and the
// worst of b.N starts.
//
//	go test ./cmd/podtrace -run '^$' -bench ServeToNodesReady -benchtime 5x
func BenchmarkServeToNodesReady(b *testing.B) {
	bin := podtracebin.Path(b)
	var ds []time.Duration
	for i := 0; i < b.N; i++ {
		ds = append(ds, serveToNodesReady(b, bin))
	}
	slices.Sort(ds)
	b.ReportMetric(ds[len(ds)/2].Seconds(), "s-median")
	b.ReportMetric(ds[len(ds)-1].Seconds(), "s-max")
}

func serveToNodesReady(b *testing.B, bin string) time.Duration {
	dir := b.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	cmd := exec.Command(bin, "serve", "--data-dir", dir)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		_ = cmd.Wait()
	}()
	deadline := start.Add(time.Minute)
	var c kubernetes.Interface
	for time.Now().Before(deadline) {
		if c == nil {
			if _, err := os.Stat(kubeconfig); err == nil {
				if cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig); err == nil {
					c = kubernetes.NewForConfigOrDie(cfg)
				}
			}
		}
		if c != nil && readyNodes(c) == 3 {
			return time.Since(start)
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.Fatalf("3 nodes not Ready within a minute: %s", errOut.String())
	return 0
}

func readyNodes(c kubernetes.Interface) int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	list, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0
	}
	n := 0
	for _, node := range list.Items {
		if nodeutil.IsNodeReady(&node) {
			n++
		}
	}
	return n
}
