// Package containerd_test runs podtrace's whole engine on real containers
// (containerd, runc, CNI) and checks what a workshop would look at: pod
// IPs in their own network namespaces, HTTP answers from the node, real
// logs, and nothing left behind after deletion. The tests need root, as
// .ci/run runs them.
package containerd_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/kubelet/nodes"
	"github.com/podtrace/podtrace/engine/kubelet/runtime/containerd"
	"github.com/podtrace/podtrace/engine/logs"
	"github.com/podtrace/podtrace/stages"
)

// cluster is an engine on real containers.
type cluster struct {
	*engine.Engine
	host   *containerd.Host
	mu     sync.Mutex
	events []stages.Event
}

func needRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("PODTRACE_REAL_CONTAINERS") == "1" {
			t.Fatal("PODTRACE_REAL_CONTAINERS=1 (.ci/run) but not root: these tests must run")
		}
		t.Skip("real containers need root; .ci/run runs these tests as root")
	}
}

// startCluster starts containerd, the registry with podtrace's images and
// an engine of n nodes on them; everything is removed at the test's end.
func startCluster(t *testing.T, n int) *cluster {
	t.Helper()
	needRoot(t)
	logs.To(io.Discard)
	dir, err := os.MkdirTemp("", "podtrace-e2e-ctrd-")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h, err := containerd.StartHost(ctx, containerd.HostConfig{Dir: filepath.Join(dir, "ctrd"),
		BuildCache: filepath.Join(os.TempDir(), "podtrace-image-cache")})
	if err != nil {
		cancel()
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	specs := nodes.Defaults(n)
	hooks, err := h.Prepare(specs)
	if err != nil {
		h.Close(ctx)
		cancel()
		t.Fatal(err)
	}
	e, err := engine.Start(ctx, engine.Config{DataDir: filepath.Join(dir, "engine"), UnsafeNoFsync: true, Nodes: specs, Seed: 1,
		NewRuntime: hooks.NewRuntime, NewNetwork: hooks.NewNetwork, RuntimeName: hooks.RuntimeName})
	if err != nil {
		h.Close(ctx)
		cancel()
		t.Fatal(err)
	}
	c := &cluster{Engine: e, host: h}
	sub := e.Hub.Subscribe()
	go func() {
		for ev := range sub.C() {
			c.mu.Lock()
			c.events = append(c.events, ev)
			c.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		e.Close()
		if err := h.Close(context.Background()); err != nil {
			t.Errorf("close host: %v", err)
		}
		os.RemoveAll(dir)
	})
	return c
}

// stageEvents returns the events of pod at stage with status.
func (c *cluster) stageEvents(pod string, stage stages.ID, status stages.Status) []stages.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []stages.Event
	for _, e := range c.events {
		if e.Pod == pod && e.Stage == stage && e.Status == status {
			out = append(out, e)
		}
	}
	return out
}

// waitPods polls pods matching selector until check accepts them.
func (c *cluster) waitPods(t *testing.T, selector string, limit time.Duration, what string, check func([]corev1.Pod) bool) []corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		pods, err := c.AdminClient().CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: selector})
		if err == nil && check(pods.Items) {
			return pods.Items
		}
		if time.Now().After(deadline) {
			var items []corev1.Pod
			if pods != nil {
				items = pods.Items
			}
			for _, p := range items {
				t.Logf("pod %s phase %s conditions %+v statuses %+v", p.Name, p.Status.Phase, p.Status.Conditions, p.Status.ContainerStatuses)
			}
			t.Fatalf("timed out after %v waiting for %s (list error %v)", limit, what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func ready(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
