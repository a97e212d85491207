package agnhost

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/podtrace/podtrace/engine/cri/sim/proc"
	"github.com/podtrace/podtrace/internal/syncbuf"
	"github.com/podtrace/podtrace/internal/waittest"
)

// podCluster is pods on loopback: each port a pod listens on gets a free
// loopback port, and its pods' Dial leads the pod's IP:port there.
type podCluster struct {
	mu    sync.Mutex
	addrs map[string]string // pod IP:port -> loopback address
}

// newPodCluster is a cluster of no pods yet.
func newPodCluster() *podCluster { return &podCluster{addrs: map[string]string{}} }

// addr is where a pod's IP:port answers on loopback, "" if nowhere.
func (cl *podCluster) addr(podAddr string) string {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.addrs[podAddr]
}

// podAt is one pod's network: its listeners are the cluster's.
type podAt struct {
	cl *podCluster
	ip string
}

func (p podAt) Listen(port int) ([]net.Listener, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p.cl.mu.Lock()
	p.cl.addrs[net.JoinHostPort(p.ip, strconv.Itoa(port))] = l.Addr().String()
	p.cl.mu.Unlock()
	return []net.Listener{l}, nil
}

func (p podAt) ListenPacket(int) ([]net.PacketConn, error) { return nil, nil }

// Dial leads a TCP connection to a pod's IP:port to where it listens;
// anything else is refused.
func (p podAt) Dial(ctx context.Context, network, addr string, timeout time.Duration) (net.Conn, error) {
	if to := p.cl.addr(addr); network == "tcp" && to != "" {
		return (&net.Dialer{Timeout: timeout}).DialContext(ctx, network, to)
	}
	to := net.TCPAddrFromAddrPort(netip.MustParseAddrPort(addr))
	return nil, &net.OpError{Op: "dial", Net: network, Addr: to, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
}

// start runs argv in a pod named name at ip, whose /etc/hosts also
// names hosts (standing in for Services' names), until the test ends;
// it returns the pod's log and the process's exit status once it ends.
func (cl *podCluster) start(t *testing.T, name, ip, hosts string, argv ...string) (*syncbuf.Buffer, <-chan int) {
	t.Helper()
	fsys := proc.NewFS(nil, false)
	w, err := fsys.Open("/etc/hosts", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(w, "127.0.0.1\tlocalhost\n"+ip+"\t"+name+"\n"+hosts)
	w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var log syncbuf.Buffer
	exited, done := make(chan int, 1), make(chan struct{})
	go func() {
		defer close(done)
		code, _ := proc.Run(ctx, proc.Process{Programs: Programs(), Argv: argv, Env: []string{"HOSTNAME=" + name}, FS: fsys, Stderr: &log,
			Image: agnhostImage, Hostname: name, Net: podAt{cl, ip}, Sleep: func(context.Context, time.Duration) error { return nil }})
		exited <- code
	}()
	t.Cleanup(func() { cancel(); <-done })
	return &log, exited
}

// get is an HTTP GET of path from the pod's address, as "status body".
func (cl *podCluster) get(t *testing.T, podAddr, path string) string {
	t.Helper()
	waittest.EventuallyEvery(t, "something to listen on "+podAddr, 10*time.Millisecond, time.Minute, func() (bool, string) {
		return cl.addr(podAddr) != "", ""
	})
	resp, err := (&http.Client{Timeout: time.Minute}).Get("http://" + cl.addr(podAddr) + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return http.StatusText(resp.StatusCode) + " " + string(b)
}

// waitLog waits until the pod's log says want.
func waitLog(t *testing.T, log *syncbuf.Buffer, want string) {
	t.Helper()
	waittest.EventuallyEvery(t, "the log to say "+strconv.Quote(want), 10*time.Millisecond, time.Minute, func() (bool, string) {
		return strings.Contains(log.String(), want), log.String()
	})
}

// TestGuestbookApplication runs the Kubectl Guestbook spec's application
// (a primary, a replica, a frontend) and asks the frontend as the spec
// does: an entry set through it is read back from the replica.
func TestGuestbookApplication(t *testing.T) {
	cl := newPodCluster()
	services := "10.244.1.2\tagnhost-primary\n10.244.1.3\tagnhost-replica\n"
	cl.start(t, "primary-1", "10.244.1.2", services, "agnhost", "guestbook", "--http-port", "6379")
	replicaLog, _ := cl.start(t, "replica-1", "10.244.1.3", services, "agnhost", "guestbook", "--replicaof", "agnhost-primary", "--http-port", "6379")
	cl.start(t, "frontend-1", "10.244.1.4", services, "agnhost", "guestbook", "--backend-port", "6379")
	waitLog(t, replicaLog, "Registered to node: agnhost-primary")
	frontend := "10.244.1.4:80"
	for _, tc := range []struct{ addr, path, want string }{
		{frontend, "/guestbook?cmd=get&key=messages&value=", `OK {"data":""}`},
		{frontend, "/guestbook?cmd=set&key=messages&value=TestEntry", `OK {"message":"Updated"}`},
		{frontend, "/guestbook?cmd=get&key=messages&value=", `OK {"data":"TestEntry"}`},
		{"10.244.1.3:6379", "/get", `OK {"data":{"messages":"TestEntry"}}`},
		{frontend, "/guestbook?cmd=drop", "Bad Request unsupported cmd: 'drop'\n"},
		{frontend, "/guestbook?cmd=set", "Bad Request cannot set with empty key.\n"},
		{"10.244.1.2:6379", "/set?value=x", "Bad Request cannot set with empty key.\n"},
		{frontend, "/", "Not Found 404 page not found\n"},
	} {
		if got := cl.get(t, tc.addr, tc.path); got != tc.want {
			t.Errorf("GET %s%s = %q, want %q", tc.addr, tc.path, got, tc.want)
		}
	}
	waitLog(t, replicaLog, "GET /set?key=messages&value=TestEntry")
}

// TestGuestbookFrontendWithoutBackends answers as agnhost's does when the
// backends' names do not resolve or nothing listens there.
func TestGuestbookFrontendWithoutBackends(t *testing.T) {
	cl := newPodCluster()
	cl.start(t, "frontend-1", "10.244.1.4", "10.244.1.9\tagnhost-primary\n", "agnhost", "guestbook", "--backend-port", "6379")
	for _, tc := range []struct{ path, want string }{
		{"/guestbook?cmd=get&key=messages", "Bad Request host and/or port param are invalid. lookup agnhost-replica: no such host\n"},
		{"/guestbook?cmd=set&key=messages&value=x", "Expectation Failed encountered error: Get \"http://10.244.1.9:6379/set?key=messages&value=x\": dial tcp 10.244.1.9:6379: connect: connection refused\n"},
	} {
		if got := cl.get(t, "10.244.1.4:80", tc.path); got != tc.want {
			t.Errorf("GET %s = %q, want %q", tc.path, got, tc.want)
		}
	}
}
