package containerd

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/containerd/v2/pkg/namespaces"

	"github.com/podtrace/podtrace/engine/kubelet/network"
	"github.com/podtrace/podtrace/engine/kubelet/network/cni/netns"
	"github.com/podtrace/podtrace/engine/kubelet/runtime"
	"github.com/podtrace/podtrace/images"
)

var (
	hostOnce sync.Once
	testHost *Host
	hostErr  error
)

// sharedHost starts one containerd, registry and image set for the
// package's tests (building the images takes a while the first time).
func sharedHost(t *testing.T) *Host {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("PODTRACE_REAL_CONTAINERS") == "1" {
			t.Fatal("PODTRACE_REAL_CONTAINERS=1 (.ci/run) but not root: these tests must run")
		}
		t.Skip("real containers need root")
	}
	hostOnce.Do(func() {
		dir, err := os.MkdirTemp("", "podtrace-ctrd-")
		if err != nil {
			hostErr = err
			return
		}
		testHost, hostErr = StartHost(context.Background(), HostConfig{Dir: dir,
			BuildCache: os.TempDir() + "/podtrace-image-cache"})
	})
	if hostErr != nil {
		t.Fatal(hostErr)
	}
	return testHost
}

var nodeSeq atomic.Int32

// uniqueNode returns a node name not used before in this process, so that
// repeated runs (-count) get fresh containerd namespaces.
func uniqueNode(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, nodeSeq.Add(1))
}

func TestMain(m *testing.M) {
	code := m.Run()
	if testHost != nil {
		if err := testHost.Close(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "close host:", err)
			code = 1
		}
		os.RemoveAll(testHost.cfg.Dir)
	}
	os.Exit(code)
}

// httpGetIn fetches url from inside the network namespace at ns.
func httpGetIn(ns, url string) (string, error) {
	tr := &http.Transport{DialContext: func(ctx context.Context, nw, addr string) (net.Conn, error) {
		var c net.Conn
		err := netns.Do(ns, func() error {
			var err error
			c, err = (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, nw, addr)
			return err
		})
		return c, err
	}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestPodLifecycleOnRealContainers(t *testing.T) {
	h := sharedHost(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rt, pl, err := h.Node(uniqueNode("rt-test"), "10.244.50.0/24")
	if err != nil {
		t.Fatal(err)
	}
	events := rt.Events(ctx)

	if img, err := rt.ImageStatus(ctx, images.Demo); err != nil || img != nil {
		t.Fatalf("demo image present before any pull: %v %v", img, err)
	}
	if _, err := rt.PullImage(ctx, "podtrace.dev/demo:no-such-tag", nil); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("pull of a missing tag: %v", err)
	}
	img, err := rt.PullImage(ctx, images.Demo, nil)
	if err != nil {
		t.Fatal(err)
	}
	if img.Size < 1<<20 || !strings.HasPrefix(img.ID, "sha256:") || !strings.HasPrefix(img.RepoDigest, "podtrace.dev/demo@sha256:") {
		t.Fatalf("pulled image %+v", img)
	}
	if _, err := rt.PullImage(ctx, images.Busybox, nil); err != nil {
		t.Fatal(err)
	}

	sb, err := rt.RunPodSandbox(ctx, runtime.SandboxConfig{Name: "web", Namespace: "default", UID: "uid-1", Hostname: "web"})
	if err != nil {
		t.Fatal(err)
	}
	pod := network.Pod{Namespace: "default", Name: "web", UID: "uid-1", SandboxID: sb}
	res, err := pl.SetUp(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	web, err := rt.CreateContainer(ctx, sb, runtime.ContainerConfig{Name: "web", Image: images.Demo,
		Env: map[string]string{"PORT": "8080"}, Resources: &runtime.Resources{MemoryLimitBytes: 64 << 20, CPUShares: 256, CPUQuota: 50000, CPUPeriod: 100000}})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(ctx, web); err != nil {
		t.Fatal(err)
	}
	// The demo server answers on the pod IP from the node's namespace.
	var body string
	for i := 0; i < 50; i++ {
		if body, err = httpGetIn(pl.NodeNetNS(), "http://"+res.IP+":8080/hello"); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil || !strings.Contains(body, "hello from web") {
		t.Fatalf("GET pod IP: %q %v", body, err)
	}
	// cgroup limits reached the container.
	limit, err := os.ReadFile("/sys/fs/cgroup/memory/" + rt.Namespace() + "/" + web + "/memory.limit_in_bytes")
	if err != nil || strings.TrimSpace(string(limit)) != fmt.Sprint(64<<20) {
		t.Errorf("memory limit %q %v", limit, err)
	}
	// Exec runs in the container and sees the pod's hostname and address.
	out, err := rt.ExecSync(ctx, web, []string{"/demo-does-not-exist"}, 5*time.Second)
	if err == nil && out.ExitCode == 0 {
		t.Errorf("exec of a missing binary succeeded: %+v", out)
	}
	sh, err := rt.CreateContainer(ctx, sb, runtime.ContainerConfig{Name: "sh", Image: images.Busybox,
		Command: []string{"sh", "-c", "echo started; echo oops >&2; exec sleep 600"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(ctx, sh); err != nil {
		t.Fatal(err)
	}
	ex, err := rt.ExecSync(ctx, sh, []string{"sh", "-c", "hostname; ip -4 addr show eth0; exit 3"}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if ex.ExitCode != 3 || !strings.Contains(ex.Stdout, "web\n") || !strings.Contains(ex.Stdout, res.IP) {
		t.Fatalf("exec: %+v", ex)
	}
	// Logs: the demo server's start line and request line; both streams of sh.
	logs, _ := rt.ContainerLogs(ctx, web)
	joined := ""
	for _, l := range logs {
		joined += l.Stream + ":" + l.Text + "\n"
	}
	if !strings.Contains(joined, "stdout:demo server web listening on :8080") || !strings.Contains(joined, "GET /hello from") {
		t.Fatalf("demo logs:\n%s", joined)
	}
	time.Sleep(200 * time.Millisecond)
	logs, _ = rt.ContainerLogs(ctx, sh)
	// stdout and stderr are separate pipes: their relative order is not kept.
	got := map[string]bool{}
	for _, l := range logs {
		got[l.Stream+":"+l.Text] = true
	}
	if len(logs) != 2 || !got["stdout:started"] || !got["stderr:oops"] {
		t.Fatalf("sh logs: %+v", logs)
	}
	// Stop with grace: the demo server exits on SIGTERM by itself.
	start := time.Now()
	if err := rt.StopContainer(ctx, web, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if st, _ := rt.ContainerStatus(ctx, web); st.State != runtime.StateExited || st.ExitCode != 0 || time.Since(start) > 5*time.Second {
		t.Fatalf("after graceful stop: %+v in %v", st, time.Since(start))
	}
	// sleep as PID 1 ignores SIGTERM: killed after the timeout.
	start = time.Now()
	if err := rt.StopContainer(ctx, sh, 500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if st, _ := rt.ContainerStatus(ctx, sh); st.State != runtime.StateExited || st.ExitCode != 137 || time.Since(start) < 500*time.Millisecond {
		t.Fatalf("after kill: %+v in %v", st, time.Since(start))
	}
	seen := map[runtime.State]bool{}
	for len(events) > 0 || len(seen) < 3 {
		select {
		case e := <-events:
			seen[e.State] = true
		case <-time.After(time.Second):
			t.Fatalf("events seen %v", seen)
		}
		if len(seen) == 3 {
			break
		}
	}

	if err := pl.TearDown(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := rt.StopPodSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	if err := rt.RemovePodSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	assertClean(t, rt, pl)
}

// assertClean checks that nothing of the node is left in containerd, the
// runtime's netns directory or host-local's allocations.
func assertClean(t *testing.T, rt *Runtime, pl interface{ Allocations() ([]string, error) }) {
	t.Helper()
	ctx := namespaces.WithNamespace(context.Background(), rt.Namespace())
	c := rt.Client()
	ctrs, err := c.Containers(ctx)
	if err != nil || len(ctrs) != 0 {
		t.Errorf("containers left: %d %v", len(ctrs), err)
	}
	tasks, err := c.TaskService().List(ctx, nil)
	if err != nil {
		t.Errorf("list tasks: %v", err)
	} else if len(tasks.Tasks) != 0 {
		t.Errorf("tasks left: %v", tasks.Tasks)
	}
	n := 0
	if err := c.SnapshotService(rt.cfg.Snapshotter).Walk(ctx, func(_ context.Context, i snapshotInfo) error {
		if i.Kind == snapshotActive {
			n++
		}
		return nil
	}); err != nil || n != 0 {
		t.Errorf("active snapshots left: %d %v", n, err)
	}
	if ents, _ := os.ReadDir(rt.cfg.Dir + "/netns"); len(ents) != 0 {
		t.Errorf("network namespaces left: %d", len(ents))
	}
	if a, err := pl.Allocations(); err != nil || len(a) != 0 {
		t.Errorf("IP allocations left: %v %v", a, err)
	}
}

type snapshotInfo = snapshots.Info

const snapshotActive = snapshots.KindActive

func TestNodeRestartRemovesWhatAKilledRunLeft(t *testing.T) {
	h := sharedHost(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	node := uniqueNode("restart")
	rt, pl, err := h.Node(node, "10.244.53.0/24")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.PullImage(ctx, images.Busybox, nil); err != nil {
		t.Fatal(err)
	}
	sb, err := rt.RunPodSandbox(ctx, runtime.SandboxConfig{Name: "left", Namespace: "default", UID: "uid-l", Hostname: "left"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pl.SetUp(ctx, network.Pod{Namespace: "default", Name: "left", SandboxID: sb}); err != nil {
		t.Fatal(err)
	}
	id, err := rt.CreateContainer(ctx, sb, runtime.ContainerConfig{Name: "sleep", Image: images.Busybox, Command: []string{"sleep", "600"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	// The run dies: its runtime forgets everything, the containers keep running.
	h.mu.Lock()
	h.runtimes, h.networks = h.runtimes[:len(h.runtimes)-1], h.networks[:len(h.networks)-1]
	h.mu.Unlock()
	rt.Close()
	rt2, pl2, err := h.Node(node, "10.244.53.0/24")
	if err != nil {
		t.Fatal(err)
	}
	assertClean(t, rt2, pl2)
}
