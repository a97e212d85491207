package etcd

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podtrace/podtrace/internal/waittest"
)

func TestEmbeddedKeepsDataAcrossRestarts(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Start(ctx, Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client.Put(ctx, "/registry/test/a", "1"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if b, _ := os.ReadFile(filepath.Join(dir, "etcd.log")); len(b) == 0 {
		t.Log("etcd.log is empty (warn level); that is fine")
	}
	if n := openedBy(t, filepath.Join(dir, "etcd.log")); n != 0 {
		t.Errorf("etcd.log still open %d times after Close", n)
	}
	s, err = Start(ctx, Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	resp, err := s.Client.Get(ctx, "/registry/test/a")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "1" {
		t.Fatalf("after restart: %v %v", resp, err)
	}
}

func TestTemporaryDirIsRemoved(t *testing.T) {
	s, err := Start(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	dir := s.tmpDir
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("temporary data dir %s survived Close", dir)
	}
}

// TestExternalEtcd runs Debian's etcd-server binary and points podtrace at it.
func TestExternalEtcd(t *testing.T) {
	bin, err := exec.LookPath("etcd")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("etcd binary not installed (apt-get install etcd-server)")
		}
		t.Skip("etcd binary not installed (apt-get install etcd-server)")
	}
	ports, err := freePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	client := "http://127.0.0.1:" + itoa(ports[0])
	peer := "http://127.0.0.1:" + itoa(ports[1])
	dir := t.TempDir()
	logf, _ := os.Create(filepath.Join(dir, "external.log"))
	cmd := exec.Command(bin, "--name", "ext", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "ext="+peer)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var s *Server
	waittest.EventuallyEvery(t, "a client of the external etcd", 200*time.Millisecond, 30*time.Second, func() (bool, string) {
		s, err = Start(ctx, Config{Endpoints: []string{client}})
		return err == nil, fmt.Sprint(err)
	})
	defer s.Close()
	if s.Embedded() {
		t.Fatal("external endpoints must not start an embedded member")
	}
	if _, err := s.Client.Put(ctx, "/registry/x", "y"); err != nil {
		t.Fatal(err)
	}
	if _, err := Start(context.Background(), Config{Endpoints: []string{"http://127.0.0.1:1"}}); err == nil ||
		!strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("unreachable etcd should fail naming the endpoint, got %v", err)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// A client port that another process took between freePorts and etcd's
// bind: etcd's own error is recognised, and Start tries new ports.
func TestStartTriesNewPortsWhenOneIsTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	find, calls := freePorts, 0
	defer func() { freePorts = find }()
	freePorts = func(n int) ([]int, error) {
		calls++
		ports, err := find(n)
		if calls == 1 && err == nil {
			ports[0] = ln.Addr().(*net.TCPAddr).Port
		}
		return ports, err
	}
	dir := t.TempDir()
	s, err := Start(context.Background(), Config{DataDir: dir, UnsafeNoFsync: true})
	if err != nil {
		t.Fatalf("start with the first client port taken: %v", err)
	}
	if n := openedBy(t, filepath.Join(dir, "etcd.log")); n != 1 {
		t.Errorf("etcd.log open %d times after a retried start, want 1", n)
	}
	defer s.Close()
	if calls != 2 {
		t.Errorf("free ports asked for %d times, want 2 (one retry)", calls)
	}
	if strings.HasSuffix(s.Endpoints[0], ":"+strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)) {
		t.Errorf("etcd answers on the taken port: %v", s.Endpoints)
	}
}

// openedBy counts this process's open files that are path (Linux's
// /proc/self/fd; skipped elsewhere).
func openedBy(t *testing.T, path string) int {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd here")
	}
	n := 0
	for _, fd := range fds {
		if to, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && to == path {
			n++
		}
	}
	return n
}
