// Package kubectle2e drives podtrace's embedded cluster with the real
// kubectl binaries — the newest and the oldest installed — and asserts on
// what they print, as a user at a terminal would read it. The tests share
// one cluster; each release in each test works in a namespace of its own.
package kubectle2e

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/enginetest"
	"github.com/podtrace/podtrace/engine/logs"
	"github.com/podtrace/podtrace/engine/nodes"
	"github.com/podtrace/podtrace/engine/pki"
	"github.com/podtrace/podtrace/internal/syncbuf"
	"github.com/podtrace/podtrace/internal/waittest"
	"github.com/podtrace/podtrace/stages"
)

// versions are the kubectl releases every case runs with: the newest and the
// oldest installed on the CI machine.
var versions = []string{"1.33", "1.27"}

// kubectlDirs are where the versioned binaries (kubectl.1.33, ...) live.
var kubectlDirs = []string{"/usr/lib/google-cloud-sdk/bin", "/usr/local/bin", "/usr/bin"}

func kubectlBinary(t *testing.T, version string) string {
	t.Helper()
	name := "kubectl." + version
	for _, dir := range kubectlDirs {
		if p := filepath.Join(dir, name); isExecutable(p) {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is not installed (looked in %v and PATH)", name, kubectlDirs)
	}
	t.Skipf("%s is not installed (looked in %v and PATH)", name, kubectlDirs)
	return ""
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// cluster is a running podtrace engine with its stage events recorded.
type cluster struct {
	e *engine.Engine

	mu     sync.Mutex
	events []stages.Event
}

// shared is the package's one cluster: the first test that needs it starts
// it, every test then works in namespaces of its own on it, and TestMain
// stops it once all have run (closeShared).
var shared struct {
	once  sync.Once
	c     *cluster
	err   error
	close func()
}

// sharedCluster returns the package's cluster, started on first use.
func sharedCluster(t *testing.T) *cluster {
	t.Helper()
	shared.once.Do(func() { shared.c, shared.close, shared.err = startCluster() })
	if shared.err != nil {
		t.Fatalf("start the cluster: %v", shared.err)
	}
	return shared.c
}

// closeShared stops the package's cluster if a test started it.
func closeShared() {
	if shared.close != nil {
		shared.close()
	}
}

// eachKubectl runs test once per kubectl release on the package's cluster,
// beside the package's other tests and the releases side by side, each in a
// subtest of its own with that release's kubectl, in a namespace of its own
// (see namespace), and a suffix ("133" for 1.33) that keeps the names of
// what it makes outside namespaces (nodes, CRDs, users) apart. It skips in
// -short mode.
func eachKubectl(t *testing.T, test func(t *testing.T, c *cluster, k *kubectl, suffix string)) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	t.Parallel()
	c := sharedCluster(t)
	for _, v := range versions {
		suffix := strings.ReplaceAll(v, ".", "")
		ns := "e2e-" + strings.ToLower(strings.TrimPrefix(t.Name(), "Test")) + "-" + suffix
		t.Run("kubectl-"+v, func(t *testing.T) {
			t.Parallel()
			test(t, c, c.namespace(t, v, ns), suffix)
		})
	}
}

// startCluster starts the whole engine (etcd, API server, controllers,
// scheduler, 3 real kubelets) on the real clock, as `podtrace serve` does,
// and returns it with the function that stops it.
func startCluster() (*cluster, func(), error) {
	logs.To(io.Discard)
	// Removed with enginetest.RemoveDataDir, which waits out the kubelets'
	// late writes.
	dir, err := os.MkdirTemp("", "podtrace-kubectl-")
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	e, err := engine.Start(ctx, engine.Config{DataDir: dir, UnsafeNoFsync: true, Nodes: nodes.Defaults(3), Speed: 1, Seed: 1})
	if err != nil {
		cancel()
		enginetest.RemoveDataDir(dir)
		return nil, nil, err
	}
	c := &cluster{e: e}
	sub := e.Hub.Subscribe()
	go func() {
		for ev := range sub.C() {
			c.mu.Lock()
			c.events = append(c.events, ev)
			c.mu.Unlock()
		}
	}()
	return c, func() { cancel(); e.Close(); enginetest.RemoveDataDir(dir) }, nil
}

// stageEvents returns the recorded stage events that match.
func (c *cluster) stageEvents(match func(stages.Event) bool) []stages.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []stages.Event
	for _, ev := range c.events {
		if match(ev) {
			out = append(out, ev)
		}
	}
	return out
}

// kubectl runs one kubectl release against the cluster, with its own HOME
// so discovery and OpenAPI caches start empty, and its own kubeconfig,
// whose contexts (the admin's and the viewer's) use namespace ns.
type kubectl struct {
	t       *testing.T
	bin     string
	version string
	env     []string
	dir     string
	// kubeconfig is the file the contexts are in; ns is their namespace.
	kubeconfig, ns string
}

// namespace makes namespace ns for the test and returns a kubectl release
// working in it; the namespace goes when the test ends. The viewer may read
// it as podtrace lets it read "default" (engine/controlplane's bootstrap):
// with upstream's "view" ClusterRole.
func (c *cluster) namespace(t *testing.T, version, ns string) *kubectl {
	t.Helper()
	k := &kubectl{t: t, bin: kubectlBinary(t, version), version: version, dir: t.TempDir(), ns: ns}
	cfg, err := clientcmd.LoadFromFile(c.e.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, ctx := range cfg.Contexts {
		ctx.Namespace = ns
	}
	k.kubeconfig = filepath.Join(k.dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, k.kubeconfig); err != nil {
		t.Fatal(err)
	}
	k.env = append(os.Environ(), "KUBECONFIG="+k.kubeconfig, "HOME="+k.dir)
	// The namespace, the viewer's binding and the waits are the harness's,
	// not what a test checks: they go through client-go, a kubectl process
	// fewer each (about 0.25 CPU-s a process, on CI's 2 cores).
	admin, ctx := c.e.AdminClient(), context.Background()
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
	t.Cleanup(func() {
		if err := admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete namespace %s: %v", ns, err)
		}
	})
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "podtrace-viewer", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: pki.ViewerUser}}}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the viewer's rolebinding in %s: %v", ns, err)
	}
	// Pods need the namespace's default ServiceAccount, which its
	// controller makes, and the viewer's binding to be in force.
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: pki.ViewerUser,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "list", Resource: "pods"}}}
	waittest.EventuallyEvery(t, "namespace "+ns+" ready for pods and the viewer", poll, waitLong, func() (bool, string) {
		if _, err := admin.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err != nil {
			return false, err.Error()
		}
		got, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return false, err.Error()
		}
		return got.Status.Allowed, "the viewer may not list pods yet: " + got.Status.Reason
	})
	return k
}

// run runs kubectl with args and returns stdout, stderr and the error.
func (k *kubectl) run(args ...string) (string, string, error) { return k.input("", args...) }

// input runs kubectl with args and stdin as its input, and returns
// stdout, stderr and the error.
func (k *kubectl) input(stdin string, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.bin, args...)
	cmd.Env, cmd.Dir, cmd.Stdin = k.env, k.dir, strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

// ok runs kubectl and fails the test unless it succeeds; it returns stdout.
func (k *kubectl) ok(args ...string) string {
	k.t.Helper()
	out, errOut, err := k.run(args...)
	if err != nil {
		k.t.Fatalf("kubectl %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// fails runs kubectl, fails the test if it succeeds, and returns stderr.
func (k *kubectl) fails(args ...string) string {
	k.t.Helper()
	out, errOut, err := k.run(args...)
	if err == nil {
		k.t.Fatalf("kubectl %s succeeded, want an error\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), out, errOut)
	}
	return errOut
}

// start runs a long-lived kubectl (get -w, logs -f) whose output is read
// while it runs; stop ends it.
func (k *kubectl) start(args ...string) *stream {
	k.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, k.bin, args...)
	cmd.Env, cmd.Dir = k.env, k.dir
	s := &stream{cancel: cancel, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &s.out, &s.errOut
	if err := cmd.Start(); err != nil {
		cancel()
		k.t.Fatalf("start kubectl %s: %v", strings.Join(args, " "), err)
	}
	go func() { cmd.Wait(); close(s.done) }()
	k.t.Cleanup(s.stop)
	return s
}

// stream is a running kubectl's output.
type stream struct {
	out, errOut syncbuf.Buffer
	cancel      context.CancelFunc
	done        chan struct{}
}

func (s *stream) stop() { s.cancel(); <-s.done }

// exited reports whether the command has ended by itself.
func (s *stream) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// waitOutput waits until stdout satisfies cond.
func (s *stream) waitOutput(t *testing.T, what string, timeout time.Duration, cond func(string) bool) string {
	t.Helper()
	var out string
	waittest.EventuallyEvery(t, what, poll, timeout, func() (bool, string) {
		out = s.out.String()
		return cond(out), "stdout:\n" + out + "\nstderr:\n" + s.errOut.String()
	})
	return out
}

// waitLong is how long a test waits for the cluster to do what it was
// asked: minutes, as the package shares 2 cores with the other packages'
// tests in CI.
const waitLong = 3 * time.Minute

// poll is how often a wait asks kubectl again: each ask is a process.
const poll = 250 * time.Millisecond

// tableRows splits each line of a kubectl table into its cells: runs of two
// or more spaces separate columns, single spaces stay inside a cell ("NOMINATED
// NODE", "1 (5m ago)"); empty cells vanish.
func tableRows(out string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if strings.TrimSpace(line) != "" {
			rows = append(rows, splitColumns(line))
		}
	}
	return rows
}

func splitColumns(line string) []string {
	var cells []string
	for _, part := range strings.Split(line, "  ") {
		if p := strings.TrimSpace(part); p != "" {
			cells = append(cells, p)
		}
	}
	return cells
}

// rowFor returns the row whose first cell is name (or whose cell at col is).
func rowFor(rows [][]string, col int, name string) []string {
	for _, r := range rows {
		if len(r) > col && r[col] == name {
			return r
		}
	}
	return nil
}

// writeFile writes a manifest into the kubectl's working directory.
func (k *kubectl) writeFile(name, content string) string {
	k.t.Helper()
	p := filepath.Join(k.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		k.t.Fatal(err)
	}
	return name
}

// getThroughForward runs kubectl port-forward from a local port kubectl
// picks to port 80 of pod, sends an HTTP GET through it and returns the
// forward (stopped when the test ends) and what came back.
func (k *kubectl) getThroughForward(t *testing.T, pod string) (*stream, []byte) {
	t.Helper()
	s := k.start("port-forward", "pod/"+pod, ":80")
	t.Cleanup(s.stop)
	out := s.waitOutput(t, "Forwarding from", waitLong, func(out string) bool {
		return strings.Contains(out, "Forwarding from 127.0.0.1:")
	})
	port := regexp.MustCompile(`127\.0\.0\.1:(\d+) -> 80`).FindStringSubmatch(out)
	if port == nil {
		t.Fatalf("no local port in %q", out)
	}
	conn, err := net.DialTimeout("tcp", "127.0.0.1:"+port[1], time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Minute))
	_, _ = conn.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
	b, _ := io.ReadAll(conn)
	return s, b
}
