package upstream_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/podtrace/podtrace/engine/controlplane"
	"github.com/podtrace/podtrace/internal/waittest"
)

// With an external etcd, /readyz is kube-apiserver's own: it fails while
// etcd does not answer, and recovers when it does again.
func TestReadyzFollowsAnExternalEtcd(t *testing.T) {
	bin, err := exec.LookPath("etcd")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("etcd binary not installed (apt-get install etcd-server)")
		}
		t.Skip("etcd binary not installed (apt-get install etcd-server)")
	}
	client, peer := "http://"+freeAddr(t), "http://"+freeAddr(t)
	dir := t.TempDir()
	logf, err := os.Create(filepath.Join(dir, "external-etcd.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, "--name", "ext", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "ext="+peer)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cp *controlplane.ControlPlane
	waittest.EventuallyEvery(t, "the control plane to start on the external etcd", 500*time.Millisecond, time.Minute, func() (bool, string) {
		cp, err = controlplane.Start(ctx, controlplane.Config{DataDir: filepath.Join(dir, "podtrace"), EtcdEndpoints: []string{client}})
		return err == nil, fmt.Sprint(err)
	})
	defer cp.Close()
	hc, err := rest.HTTPClientFor(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	hc.Timeout = 10 * time.Second
	readyz := func() (int, string) {
		resp, err := hc.Get(cp.API.URL + "/readyz?verbose")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	waitReadyz := func(want int, what string) string {
		t.Helper()
		var body string
		waittest.EventuallyEvery(t, fmt.Sprintf("/readyz to answer %d %s", want, what), 250*time.Millisecond, 90*time.Second, func() (bool, string) {
			var code int
			code, body = readyz()
			return code == want, fmt.Sprintf("%d\n%s", code, body)
		})
		return body
	}
	waitReadyz(200, "with etcd up")
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	body := waitReadyz(500, "while etcd is stopped")
	if !strings.Contains(body, "[-]etcd failed") {
		t.Errorf("/readyz while etcd is stopped does not name etcd:\n%s", body)
	}
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitReadyz(200, "once etcd answers again")
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}
