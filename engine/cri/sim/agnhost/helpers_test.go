package agnhost

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/podtrace/podtrace/engine/cri/sim/proc"
	"github.com/podtrace/podtrace/internal/syncbuf"
)

const agnhostImage = "registry.k8s.io/e2e-test-images/agnhost:2.55"

// container gives a test container a config volume (read-only, with one
// key) and an emptyDir (writable), as the kubelet mounts them.
func container(t *testing.T) *proc.FS {
	dir := t.TempDir()
	config, data := filepath.Join(dir, "config"), filepath.Join(dir, "data")
	for _, d := range []string{config, data} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(config, "mode"), []byte("debug\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return proc.NewFS([]proc.Mount{{ContainerPath: "/etc/config", HostPath: config, ReadOnly: true}, {ContainerPath: "/data", HostPath: data}}, false)
}

// withResolvConf is a container whose /etc/resolv.conf is a pod's of
// namespace default with nameserver.
func withResolvConf(t *testing.T, nameserver string) *proc.FS {
	name := filepath.Join(t.TempDir(), "resolv.conf")
	conf := "search default.svc.cluster.local svc.cluster.local cluster.local\nnameserver " + nameserver + "\noptions ndots:5\n"
	if err := os.WriteFile(name, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return proc.NewFS([]proc.Mount{{ContainerPath: "/etc/resolv.conf", HostPath: name}}, false)
}

// sh runs script under exec in a container with fsys, and fails the test
// unless it exits 0.
func sh(t *testing.T, fsys *proc.FS, script string) {
	t.Helper()
	var errw bytes.Buffer
	code, err := proc.Run(context.Background(), proc.Process{Argv: []string{"sh", "-c", script}, FS: fsys, Stderr: &errw, Exec: true})
	if err != nil || code != 0 {
		t.Fatalf("%s: exit %d (%v): %s", script, code, err, errw.String())
	}
}

// refused is a connection refused over network, as a pod's dial gets it.
func refused(network string) error {
	return &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
}

// loopNet is a pod's network on loopback: each port the container listens
// on gets a free loopback port, and addr says which.
type loopNet struct {
	mu    sync.Mutex
	tcp   map[int]string
	udp   map[int]string
	added chan struct{}
}

func newLoopNet() *loopNet {
	return &loopNet{tcp: map[int]string{}, udp: map[int]string{}, added: make(chan struct{}, 64)}
}

func (n *loopNet) Listen(port int) ([]net.Listener, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	n.tcp[port] = l.Addr().String()
	n.mu.Unlock()
	n.added <- struct{}{}
	return []net.Listener{l}, nil
}

func (n *loopNet) ListenPacket(port int) ([]net.PacketConn, error) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	n.udp[port] = pc.LocalAddr().String()
	n.mu.Unlock()
	n.added <- struct{}{}
	return []net.PacketConn{pc}, nil
}

// Dial leads the pod's connections to its own address, 10.244.1.9, to
// its ports (as /dial's requests to itself go); elsewhere it is refused.
func (n *loopNet) Dial(ctx context.Context, network, addr string, timeout time.Duration) (net.Conn, error) {
	host, p, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(p)
	if to := n.addr(network, port); host == "10.244.1.9" && to != "" {
		return (&net.Dialer{Timeout: timeout}).DialContext(ctx, network, to)
	}
	return nil, refused(network)
}

// addr is where the pod's port answers on loopback, "" if nowhere.
func (n *loopNet) addr(network string, port int) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if network == "udp" {
		return n.udp[port]
	}
	return n.tcp[port]
}

// startPod runs argv as the main process of a pod named backend-1 at
// 10.244.1.9 with file system fsys, image and env, until the test ends, and waits until it
// listens on listening sockets.
func startPod(t *testing.T, fsys *proc.FS, image string, env []string, listening int, argv ...string) (*loopNet, *syncbuf.Buffer) {
	t.Helper()
	n := newLoopNet()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var stderr syncbuf.Buffer
	go func() {
		defer close(done)
		_, _ = proc.Run(ctx, proc.Process{Programs: Programs(), Argv: argv, Env: append([]string{"HOSTNAME=backend-1"}, env...), FS: fsys,
			Stderr: &stderr, Image: image, Hostname: "backend-1", Net: n, Sleep: func(context.Context, time.Duration) error { return nil }})
	}()
	t.Cleanup(func() { cancel(); <-done })
	for range listening {
		select {
		case <-n.added:
		case <-done:
			t.Fatalf("%q exited: %s", argv, stderr.String())
		case <-time.After(time.Minute):
			t.Fatalf("%q did not listen: %s", argv, stderr.String())
		}
	}
	return n, &stderr
}

// ask sends req to the pod's port as a spec's client would: an HTTP(S)
// GET of the path req, a datagram req, or a bare TCP connect (req "").
func ask(t *testing.T, n *loopNet, network string, port int, req string) string {
	t.Helper()
	transport := network
	if network == "http" || network == "https" {
		transport = "tcp"
	}
	addr := n.addr(transport, port)
	if addr == "" {
		t.Fatalf("nothing listens on %s port %d", network, port)
	}
	switch network {
	case "http", "https":
		client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		resp, err := client.Get(network + "://" + addr + req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d %s", resp.StatusCode, b)
	}
	conn, err := net.DialTimeout(network, addr, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if req != "" {
		_, _ = conn.Write([]byte(req))
	}
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
	var got bytes.Buffer
	buf := make([]byte, 2048)
	k, err := conn.Read(buf)
	got.Write(buf[:k])
	if network == "tcp" && err == nil {
		_, _ = io.Copy(&got, conn)
	}
	return got.String()
}

// dialOnly is a pod's network that listens nowhere and dials with itself.
type dialOnly func(ctx context.Context, network, addr string, timeout time.Duration) (net.Conn, error)

func (dialOnly) Listen(int) ([]net.Listener, error)         { return nil, nil }
func (dialOnly) ListenPacket(int) ([]net.PacketConn, error) { return nil, nil }
func (d dialOnly) Dial(ctx context.Context, network, addr string, timeout time.Duration) (net.Conn, error) {
	return d(ctx, network, addr, timeout)
}
