package kubectle2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podtrace/podtrace/internal/podtracebin"
	"github.com/podtrace/podtrace/internal/syncbuf"
	"github.com/podtrace/podtrace/internal/waittest"
)

// TestServeAndKubeconfig runs `podtrace serve` as a user would in a second
// terminal: it prints the export line, `podtrace kubeconfig` prints the same
// path, kubectl reaches the cluster through it with both contexts, and an
// interrupt stops it cleanly without a log line on the terminal.
func TestServeAndKubeconfig(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	t.Parallel()
	kbin := kubectlBinary(t, versions[0])
	bin := podtracebin.Path(t)
	data := t.TempDir()
	cmd := exec.Command(bin, "serve", "--data-dir", data)
	var out, errOut syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	export := regexp.MustCompile(`(?m)^export KUBECONFIG=(\S+)$`)
	var kubeconfig string
	waittest.EventuallyEvery(t, "the export KUBECONFIG line", poll, waitLong, func() (bool, string) {
		if m := export.FindStringSubmatch(out.String()); m != nil {
			kubeconfig = m[1]
			return true, ""
		}
		return false, out.String() + errOut.String()
	})
	if want := filepath.Join(data, "kubeconfig"); kubeconfig != want {
		t.Errorf("serve exported %q, want %q", kubeconfig, want)
	}
	printed, err := exec.Command(bin, "kubeconfig", "--data-dir", data).Output()
	if err != nil || strings.TrimSpace(string(printed)) != kubeconfig {
		t.Errorf("podtrace kubeconfig = %q (%v), want %q", printed, err, kubeconfig)
	}
	k := &kubectl{t: t, bin: kbin, version: versions[0], dir: t.TempDir()}
	k.kubeconfig, k.env = kubeconfig, append(os.Environ(), "KUBECONFIG="+kubeconfig, "HOME="+k.dir)
	if got := strings.TrimSpace(k.ok("config", "get-contexts", "-o", "name")); got != "podtrace-admin\npodtrace-viewer" {
		t.Errorf("contexts = %q", got)
	}
	waittest.EventuallyEvery(t, "3 Ready nodes", poll, waitLong, func() (bool, string) {
		out, _, _ := k.run("get", "nodes", "--no-headers")
		return strings.Count(out, " Ready ") == 3, out
	})
	// In the pod network namespace each node has an IP of its own, and its
	// kubelet listens there on 10250, as on any cluster.
	if ip := k.ok("get", "node", "node-1", "-o", `jsonpath={.status.addresses[?(@.type=="InternalIP")].address}`); strings.HasPrefix(ip, "172.18.") {
		if port := k.ok("get", "node", "node-1", "-o", "jsonpath={.status.daemonEndpoints.kubeletEndpoint.Port}"); port != "10250" {
			t.Errorf("node-1 (%s) advertises its kubelet on port %s, want 10250", ip, port)
		}
		if got := k.ok("get", "--raw", "/api/v1/nodes/node-1:10250/proxy/healthz"); got != "ok" {
			t.Errorf("node-1:10250/proxy/healthz = %q", got)
		}
	}
	if got := strings.TrimSpace(k.ok("--context", "podtrace-viewer", "auth", "can-i", "get", "pods")); got != "yes" {
		t.Errorf("viewer can-i get pods = %q", got)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		if waitErr != nil {
			t.Errorf("podtrace serve exited with %v after an interrupt; stderr:\n%s", waitErr, errOut.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("podtrace serve did not stop within a minute of an interrupt")
	}
	if s := errOut.String(); s != "" {
		t.Errorf("podtrace serve wrote to stderr:\n%s", s)
	}
	if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); len(lines) != 2 {
		t.Errorf("podtrace serve printed more than its two lines:\n%s", out.String())
	}
}
