// Package containerd_test runs podtrace's engine on real containers: real
// kubelets driving containerd's own CRI plugin (one containerd per node),
// runc, and the CNI plugins behind podtrace-cni, and checks what a
// workshop would look at: pods Ready through their stages, the kubelet's
// and containerd's own words on faults, kubectl logs, exec and
// port-forward, and nothing left behind after deletion. The tests need
// root, as .ci/run runs them.
package containerd_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/engine"
	crictrd "github.com/podtrace/podtrace/engine/cri/containerd"
	"github.com/podtrace/podtrace/engine/logs"
	"github.com/podtrace/podtrace/engine/nodes"
	"github.com/podtrace/podtrace/engine/registry"
	"github.com/podtrace/podtrace/images"
	"github.com/podtrace/podtrace/internal/podtracebin"
	"github.com/podtrace/podtrace/internal/waittest"
	"github.com/podtrace/podtrace/stages"
)

// realCluster is an engine whose nodes run the real kubelet on a
// containerd of their own, through containerd's CRI plugin.
type realCluster struct {
	*engine.Engine
	host *crictrd.Host
	// mirror is the loopback registry every pull goes to first
	// (--registry-mirror), holding the demo image as docker.io/library/demo.
	mirror string

	// netns are the pod network namespaces there were before it started.
	netns map[string]bool

	mu     sync.Mutex
	events []stages.Event
}

// podNetNS lists containerd's pod network namespaces on this machine.
func podNetNS() []string {
	ns, _ := filepath.Glob("/var/run/netns/cni-*")
	return ns
}

// imageCache keeps podtrace's compiled image binaries across tests.
var imageCache = filepath.Join(os.TempDir(), "podtrace-image-cache")

// startMirror runs a loopback registry holding the demo image under its
// Docker Hub name (docker.io/library/demo:1.0), as a workshop's offline
// mirror would.
func startMirror(t testing.TB, ctx context.Context) string {
	t.Helper()
	reg, err := registry.Start(ctx, registry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	built, err := images.Build(ctx, images.Config{CacheDir: imageCache})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range built {
		if b.Ref != images.Demo {
			continue
		}
		dst, err := name.ParseReference(reg.Host+"/library/demo:1.0", name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(dst, b.Image, remote.WithContext(ctx)); err != nil {
			t.Fatal(err)
		}
	}
	return "http://" + reg.Host
}

// startRealCluster starts a cluster of n real kubelets on containerd; opts
// adjust its containerd host's configuration.
func startRealCluster(t testing.TB, n int, opts ...func(*crictrd.HostConfig)) *realCluster {
	t.Helper()
	needRoot(t)
	logs.To(io.Discard)
	pl := podtracebin.Plugin(t)
	dir, err := os.MkdirTemp("", "podtrace-e2e-real-")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	mirror := startMirror(t, ctx)
	hc := crictrd.HostConfig{Dir: filepath.Join(dir, "ctrd"), Plugin: pl, Mirror: mirror, BuildCache: imageCache}
	for _, o := range opts {
		o(&hc)
	}
	h, err := crictrd.StartHost(ctx, hc)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	e, err := engine.Start(ctx, engine.Config{DataDir: filepath.Join(dir, "engine"), UnsafeNoFsync: true, Nodes: nodes.Defaults(n), Seed: 1,
		Runtime: h.CRI()})
	if err != nil {
		h.Close(ctx)
		cancel()
		t.Fatal(err)
	}
	c := &realCluster{Engine: e, host: h, mirror: mirror, netns: map[string]bool{}}
	for _, ns := range podNetNS() {
		c.netns[ns] = true
	}
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

// kubectl runs the installed kubectl against the cluster.
func (c *realCluster) kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := c.tryKubectl(args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// tryKubectl runs the installed kubectl against the cluster and returns
// its combined output and error.
func (c *realCluster) tryKubectl(args ...string) (string, error) {
	out, err := exec.Command("kubectl", append([]string{"--kubeconfig", c.Kubeconfig}, args...)...).CombinedOutput()
	return string(out), err
}

func (c *realCluster) stageEvents(pod string, stage stages.ID, status stages.Status) []stages.Event {
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

func (c *realCluster) waitPods(t *testing.T, selector string, limit time.Duration, what string, check func([]corev1.Pod) bool) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	ok := false
	defer func() { // on a time-out, what the cluster said meanwhile
		if !ok {
			t.Logf("%s", c.kubectl(t, "get", "events", "-A"))
		}
	}()
	waittest.EventuallyEvery(t, what, 200*time.Millisecond, limit, func() (bool, string) {
		list, err := c.AdminClient().CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, "list: " + err.Error()
		}
		pods = list.Items
		return check(pods), podsState(pods)
	})
	ok = true
	return pods
}

// podsState is one line per pod: its phase, node and containers' states.
func podsState(pods []corev1.Pod) string {
	var b strings.Builder
	for _, p := range pods {
		fmt.Fprintf(&b, "%s %s on %q:", p.Name, p.Status.Phase, p.Spec.NodeName)
		for _, cs := range p.Status.ContainerStatuses {
			fmt.Fprintf(&b, " %s ready=%v %+v", cs.Name, cs.Ready, cs.State)
		}
		b.WriteString("\n")
	}
	return b.String()
}

const mirroredDemo = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: demo
spec:
  replicas: 2
  selector:
    matchLabels: {app: demo}
  template:
    metadata:
      labels: {app: demo}
    spec:
      terminationGracePeriodSeconds: 5
      containers:
      - name: demo
        image: demo:1.0
        ports:
        - containerPort: 8080
        readinessProbe:
          httpGet: {path: /healthz, port: 8080}
          periodSeconds: 1
`

// TestRealKubeletOnContainerd runs a Deployment of an image that only the
// mirror holds (under its Docker Hub name) on two real kubelets driving
// containerd's CRI plugin, and checks what a user would: every pod Ready
// through its stages, the cni stage's address is the pod's, the real
// kubelet's events, kubectl logs, exec and port-forward, and nothing left
// of the pods once the Deployment is deleted.
func TestRealKubeletOnContainerd(t *testing.T) {
	c := startRealCluster(t, 2)
	f := filepath.Join(t.TempDir(), "demo.yaml")
	if err := os.WriteFile(f, []byte(mirroredDemo), 0o644); err != nil {
		t.Fatal(err)
	}
	c.kubectl(t, "apply", "-f", f)
	pods := c.waitPods(t, "app=demo", 3*time.Minute, "2 Ready demo pods", func(ps []corev1.Pod) bool {
		n := 0
		for _, p := range ps {
			if ready(p) {
				n++
			}
		}
		return n == 2 && len(ps) == 2
	})
	for _, p := range pods {
		cs := p.Status.ContainerStatuses
		if len(cs) != 1 || !strings.HasPrefix(cs[0].ContainerID, "containerd://") || cs[0].Image != "docker.io/library/demo:1.0" {
			t.Errorf("pod %s container status %+v", p.Name, cs)
		}
		if evs := c.stageEvents(p.Name, stages.CNI, stages.Succeeded); len(evs) == 0 || !strings.Contains(evs[len(evs)-1].Message, p.Status.PodIP+"/") {
			t.Errorf("pod %s cni events %+v, want its IP %s", p.Name, evs, p.Status.PodIP)
		}
		for _, s := range []stages.ID{stages.Sandbox, stages.Pull, stages.Create, stages.Start, stages.Ready} {
			if len(c.stageEvents(p.Name, s, stages.Succeeded)) == 0 {
				t.Errorf("pod %s: no %s stage", p.Name, s)
			}
		}
		desc := c.kubectl(t, "describe", "pod", p.Name)
		for _, want := range []string{`Successfully pulled image "demo:1.0"`, "Container created", "Container started"} {
			if !strings.Contains(desc, want) {
				t.Errorf("kubectl describe pod %s lacks %q:\n%s", p.Name, want, desc)
			}
		}
	}
	p := pods[0].Name
	if out := c.kubectl(t, "exec", p, "--", "/demo", "echo", "hello", "from", "exec"); !strings.Contains(out, "hello from exec") {
		t.Errorf("kubectl exec: %q", out)
	}
	c.portForwardGet(t, p)
	var logs string
	waittest.Eventually(t, "kubectl logs "+p+" to show the port-forwarded GET", 30*time.Second, func() (bool, string) {
		logs = c.kubectl(t, "logs", p)
		return strings.Contains(logs, "GET /through-port-forward"), logs
	})
	if !strings.Contains(logs, "demo server "+p+" listening on :8080") || !strings.Contains(logs, "GET /through-port-forward") {
		t.Errorf("kubectl logs %s:\n%s", p, logs)
	}
	if v := c.kubectl(t, "get", "node", "node-1", "-o", "jsonpath={.status.nodeInfo.kubeletVersion} {.status.nodeInfo.containerRuntimeVersion}"); !strings.HasPrefix(v, "v1.36.3 containerd://") {
		t.Errorf("node-1 runs %q, want the real kubelet v1.36.3 on containerd", v)
	}

	c.kubectl(t, "delete", "deployment", "demo")
	c.waitPods(t, "app=demo", 2*time.Minute, "demo pods gone", func(ps []corev1.Pod) bool { return len(ps) == 0 })
	for _, p := range pods {
		if evs := c.stageEvents(p.Name, stages.Cleanup, stages.Succeeded); len(evs) == 0 || !strings.Contains(evs[len(evs)-1].Message, "CNI DEL eth0") {
			t.Errorf("pod %s cleanup events %+v, want the CNI DEL", p.Name, evs)
		}
	}
	c.waitClean(t, 3*time.Minute)
}

// portForwardGet fetches a page from pod's port 8080 through kubectl
// port-forward (kube-apiserver, then the kubelet, then containerd's
// streaming server).
func (c *realCluster) portForwardGet(t *testing.T, pod string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", "--kubeconfig", c.Kubeconfig, "port-forward", "pod/"+pod, ":8080")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	// "Forwarding from 127.0.0.1:PORT -> 8080"
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("kubectl port-forward: %v", err)
	}
	addr, _, _ := strings.Cut(strings.TrimPrefix(line, "Forwarding from "), " ")
	resp, err := http.Get("http://" + addr + "/through-port-forward")
	if err != nil {
		t.Fatalf("GET through port-forward (%q): %v", line, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(b), "hello from "+pod) {
		t.Errorf("GET through port-forward: %q", b)
	}
}

// waitClean waits until no node's containerd has a sandbox, container,
// task or active snapshot left, and no pod network namespace remains,
// as the kubelet's garbage collection (once a minute) leaves them.
func (c *realCluster) waitClean(t *testing.T, limit time.Duration) {
	t.Helper()
	waittest.EventuallyEvery(t, "no sandbox, container, task, snapshot or pod netns left after the Deployment's deletion", 2*time.Second, limit, func() (bool, string) {
		var left []string
		for _, n := range c.NodeSet.Nodes() {
			left = append(left, c.leftOn(t, n.Name)...)
		}
		return len(left) == 0, fmt.Sprintf("left: %v", left)
	})
}

func (c *realCluster) leftOn(t *testing.T, node string) []string {
	n := c.host.Node(node)
	ctx := namespaces.WithNamespace(context.Background(), "k8s.io")
	cl, err := client.New(n.Daemon.Address)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var left []string
	if sbs, err := n.Runtime.ListPodSandbox(ctx, nil); err != nil || len(sbs) != 0 {
		left = append(left, fmt.Sprintf("%s: %d sandboxes %v", node, len(sbs), err))
	}
	if ctrs, err := cl.Containers(ctx); err != nil || len(ctrs) != 0 {
		left = append(left, fmt.Sprintf("%s: %d containers %v", node, len(ctrs), err))
	}
	if tasks, err := cl.TaskService().List(ctx, nil); err != nil || len(tasks.Tasks) != 0 {
		left = append(left, fmt.Sprintf("%s: tasks %v %v", node, tasks, err))
	}
	active := 0
	if err := cl.SnapshotService("overlayfs").Walk(ctx, func(_ context.Context, i snapshots.Info) error {
		if i.Kind == snapshots.KindActive {
			active++
		}
		return nil
	}); err != nil || active != 0 {
		left = append(left, fmt.Sprintf("%s: %d active snapshots %v", node, active, err))
	}
	for _, ns := range podNetNS() {
		if !c.netns[ns] {
			left = append(left, "network namespace "+ns)
		}
	}
	return left
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

func ready(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, int(p*float64(len(s))))]
}
