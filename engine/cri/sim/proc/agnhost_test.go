package proc

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
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/podtrace/podtrace/internal/syncbuf"
)

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
func startPod(t *testing.T, fsys *FS, image string, env []string, listening int, argv ...string) (*loopNet, *syncbuf.Buffer) {
	t.Helper()
	n := newLoopNet()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var stderr syncbuf.Buffer
	go func() {
		defer close(done)
		_, _ = Run(ctx, Process{Argv: argv, Env: append([]string{"HOSTNAME=backend-1"}, env...), FS: fsys,
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
	// /dial's connections from the pod reach its own ports through its address.
	saved := dial
	dial = func(ctx context.Context, network, addr string, timeout time.Duration) (net.Conn, error) {
		host, p, _ := net.SplitHostPort(addr)
		port, _ := strconv.Atoi(p)
		if to := n.addr(network, port); host == "10.244.1.9" && to != "" {
			return (&net.Dialer{Timeout: timeout}).DialContext(ctx, network, to)
		}
		return nil, &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	t.Cleanup(func() { dial = saved })
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

const agnhostImage = "registry.k8s.io/e2e-test-images/agnhost:2.55"

func TestAgnhostServers(t *testing.T) {
	type check struct {
		network string // http, https, tcp, udp
		port    int
		req     string
		want    string
	}
	for _, tc := range []struct {
		argv      []string
		env       []string
		listening int
		checks    []check
		logged    string // in its log, after the checks
	}{
		// The Services jig's backends: the host name on a TCP connect and a datagram.
		{[]string{"/agnhost", "serve-hostname", "--http=false", "--tcp", "--udp"}, nil, 2, []check{
			{"tcp", 9376, "", "backend-1"}, {"udp", 9376, "x", "backend-1"}}, ""},
		{[]string{"/agnhost", "serve-hostname", "--port", "8090"}, nil, 1, []check{{"http", 8090, "/", "200 backend-1"}}, ""},
		// HTTPS with the image's own certificate, which the simulated image lacks as a file.
		{[]string{"/agnhost", "netexec", "--udp-port", "-1", "--tls-cert-file", "/localhost.crt", "--tls-private-key-file", "/localhost.key"}, nil, 1,
			[]check{{"https", 8080, "/echo?msg=startup", "200 startup"}}, ""},
		{[]string{"agnhost", "netexec", "--http-port=80", "--udp-port=80"}, nil, 2, []check{
			{"http", 80, "/hostname", "200 backend-1"},
			{"http", 80, "/hostName", "200 backend-1"},
			{"http", 80, "/echo?msg=hello", "200 hello"},
			{"http", 80, "/healthz", "200 "},
			{"http", 80, "/shell?shellCommand=echo+$HOSTNAME", `200 {"output":"backend-1\n"}`},
			// The pod dials itself, over HTTP and UDP, and a port where nothing listens.
			{"http", 80, "/dial?request=hostname&protocol=http&host=10.244.1.9&port=80&tries=2", `200 {"responses":["backend-1","backend-1"]}`},
			{"http", 80, "/dial?request=hostname&protocol=udp&host=10.244.1.9&port=80&tries=1", `200 {"responses":["backend-1"]}`},
			{"http", 80, "/dial?request=hostname&protocol=http&host=10.244.1.9&port=81&tries=1",
				`200 {"errors":["Get \"http://10.244.1.9:81/hostname\": dial tcp: connect: connection refused"]}`},
			{"http", 80, "/dial?protocol=http&host=10.244.1.9&port=80", "400 request parameter not specified. <nil>\n"},
			{"udp", 80, "hostname", "backend-1"},
			{"udp", 80, "echo Hello", "hello"},
		}, "GET /echo?msg=hello&code=\n"},
		// The image's entrypoint with netexec's defaults: HTTP 8080, UDP 8081.
		{[]string{"/agnhost-2", "netexec"}, nil, 2, []check{{"http", 8080, "/hostname", "200 backend-1"}, {"udp", 8081, "hostname", "backend-1"}},
			"Started UDP server on port  8081\n"},
		// klog's flags, which every agnhost subcommand accepts.
		{[]string{"/agnhost", "netexec", "--alsologtostderr", "-v=4"}, nil, 2, []check{{"http", 8080, "/hostname", "200 backend-1"}}, ""},
		{[]string{"/agnhost", "porter"}, []string{"SERVE_PORT_160=foo", "SERVE_TLS_PORT_443=tls foo", "SERVE_UDP_PORT_162=bar"}, 3, []check{
			{"http", 160, "/", "200 foo"}, {"https", 443, "/", "200 tls foo"}, {"udp", 162, "x", "bar"}}, ""},
		// Healthy for its first 10 seconds.
		{[]string{"/agnhost", "liveness"}, nil, 1, []check{{"http", 8080, "/healthz", "200 ok"}}, ""},
		{[]string{"sh", "-c", "echo OK > /data/a; exec /agnhost test-webserver"}, nil, 1, []check{
			{"http", 80, "/data/a", "200 OK\n"}, {"http", 80, "/data/b", "404 404 page not found\n"}}, ""},
	} {
		n, log := startPod(t, container(t).WithImage(agnhostImage), agnhostImage, tc.env, tc.listening, tc.argv...)
		for _, c := range tc.checks {
			if got := ask(t, n, c.network, c.port, c.req); got != c.want {
				t.Errorf("%q: %s %d %q answered %q, want %q", tc.argv, c.network, c.port, c.req, got, c.want)
			}
		}
		if !strings.Contains(log.String(), tc.logged) {
			t.Errorf("%q logged:\n%s\nwithout %q", tc.argv, log.String(), tc.logged)
		}
	}
}

// Only agnhost's image has agnhost (and dig, curl): in busybox's the same
// command is an unknown one, which listens nowhere.
func TestAgnhostOnlyInItsImage(t *testing.T) {
	for _, tc := range []struct {
		image string
		argv  []string
		code  int
		out   string
	}{
		{agnhostImage, []string{"/agnhost", "dns-suffix"}, 0, "default.svc.cluster.local,svc.cluster.local,cluster.local\n"},
		{agnhostImage, []string{"/agnhost", "dns-server-list"}, 0, "10.96.0.10\n"},
		{"docker.io/library/busybox:1.36", []string{"/agnhost", "dns-suffix"}, 0, ""},
		{"docker.io/library/busybox:1.36", []string{"/agnhost", "netexec"}, 0, ""},
	} {
		var out bytes.Buffer
		code, err := Run(context.Background(), Process{Argv: tc.argv, FS: pod(t, "10.96.0.10"), Stdout: &out, Exec: true, Image: tc.image})
		if err != nil || code != tc.code || out.String() != tc.out {
			t.Errorf("%q in %s: exit %d (%v), stdout %q, want exit %d, %q", tc.argv, tc.image, code, err, out.String(), tc.code, tc.out)
		}
	}
}

// agnhost's programs that print and exit, as the volumes' and Containers'
// specs read their logs.
func TestAgnhostPrinters(t *testing.T) {
	fsys := container(t)
	for _, tc := range []struct {
		argv []string
		code int
		out  string
	}{
		{[]string{"/agnhost", "mounttest", "--file_content=/etc/config/mode", "--file_mode=/etc/config/mode"}, 0,
			"mode of file \"/etc/config/mode\": -rw-r--r--\ncontent of file \"/etc/config/mode\": debug\n\n"},
		{[]string{"/agnhost", "mounttest", "--new_file_0660=/data/f", "--file_perm=/data/f", "--file_owner=/data/f"}, 0,
			"content of file \"/data/f\": mount-tester new file\n\nperms of file \"/data/f\": -rw-rw----\n" +
				fmt.Sprintf("owner UID of \"/data/f\": %d\nowner GID of \"/data/f\": %d\n", os.Getuid(), os.Getgid())},
		{[]string{"/agnhost", "mounttest", "--new_file_0777=/data/g", "--file_mode=/data/g"}, 0,
			"content of file \"/data/g\": mount-tester new file\n\nmode of file \"/data/g\": -rwxrwxrwx\n"},
		{[]string{"/agnhost", "mounttest", "--file_content_in_loop=/data/f", "--retry_time=10"}, 0,
			"content of file \"/data/f\": mount-tester new file\n\n"},
		{[]string{"/agnhost", "mounttest", "--new_file_0644=/etc/config/new"}, 1,
			"error writing new file \"/etc/config/new\": open /etc/config/new: read-only file system\n"},
		{[]string{"/agnhost-2", "entrypoint-tester", "override", "arguments"}, 0, "[/agnhost-2 entrypoint-tester override arguments]\n"},
	} {
		var out bytes.Buffer
		code, err := Run(context.Background(), Process{Argv: tc.argv, FS: fsys, Stdout: &out, Image: agnhostImage,
			Sleep: func(context.Context, time.Duration) error { return nil }})
		if err != nil || code != tc.code || out.String() != tc.out {
			t.Errorf("%q: exit %d (%v), stdout:\n%s\nwant exit %d, stdout:\n%s", tc.argv, code, err, out.String(), tc.code, tc.out)
		}
	}
}

// A StatefulSet's pods run agnhost test-webserver, whose readiness probe
// GETs the image's /localhost.crt; the spec moves the file away to make
// the pod unready, and back.
func TestTestWebserverServesTheImagesCertificate(t *testing.T) {
	fsys := container(t).WithImage(agnhostImage)
	n, _ := startPod(t, fsys, agnhostImage, nil, 1, "/agnhost", "test-webserver")
	for _, step := range []struct {
		mv   string
		want string
	}{
		{"", "200 -----BEGIN CERTIFICATE-----"},
		{"mv -v /localhost.crt /tmp/ || true", "404 404 page not found"},
		{"mv -v /tmp/localhost.crt / || true", "200 -----BEGIN CERTIFICATE-----"},
	} {
		if step.mv != "" {
			if code, _, stderr := run(t, fsys, true, "sh", "-c", step.mv); code != 0 {
				t.Fatalf("%s: exit %d: %s", step.mv, code, stderr)
			}
		}
		if got := ask(t, n, "http", 80, "/localhost.crt"); !strings.HasPrefix(got, step.want) {
			t.Errorf("after %q, GET /localhost.crt: %.40q, want %q...", step.mv, got, step.want)
		}
	}
	// busybox's image has no such file.
	if _, err := container(t).WithImage("docker.io/library/busybox:1.36").Stat("/localhost.crt"); err == nil {
		t.Error("busybox's image has /localhost.crt")
	}
}

// agnhost liveness's /healthz fails once its time is up.
func TestLivenessFailsAfterItsTime(t *testing.T) {
	saved := livenessAlive
	livenessAlive = 0
	t.Cleanup(func() { livenessAlive = saved })
	n, _ := startPod(t, container(t), agnhostImage, nil, 1, "/agnhost", "liveness")
	if got := ask(t, n, "http", 8080, "/healthz"); !strings.HasPrefix(got, "500 error: ") {
		t.Errorf("GET /healthz: %q, want 500 error: ...", got)
	}
}

// mounttest's fs_type reads tmpfs where the kubelet mounted one (an
// emptyDir of medium Memory on a node that records its mounts), and the
// host directory's own type elsewhere, as statfs reports it.
func TestMounttestFSType(t *testing.T) {
	mem, disk := t.TempDir(), t.TempDir()
	var st syscall.Statfs_t
	if err := syscall.Statfs(disk, &st); err != nil {
		t.Fatal(err)
	}
	diskType := strconv.FormatInt(int64(st.Type), 10)
	if st.Type == tmpfsMagic {
		diskType = "tmpfs"
	}
	fsys := NewFS([]Mount{{ContainerPath: "/mem", HostPath: mem, Type: "tmpfs"}, {ContainerPath: "/disk", HostPath: disk}}, false)
	for _, tc := range []struct{ path, want string }{
		{"/mem", "tmpfs"},
		{"/mem/sub", "tmpfs"},
		{"/disk", diskType},
		{"/", strconv.Itoa(overlayMagic)},
	} {
		if tc.path == "/mem/sub" {
			if err := os.Mkdir(filepath.Join(mem, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		var out bytes.Buffer
		code, err := Run(context.Background(), Process{Argv: []string{"/agnhost", "mounttest", "--fs_type=" + tc.path}, FS: fsys,
			Stdout: &out, Image: agnhostImage})
		want := fmt.Sprintf("mount type of %q: %s\n", tc.path, tc.want)
		if err != nil || code != 0 || out.String() != want {
			t.Errorf("mounttest --fs_type=%s: exit %d (%v), stdout %q, want %q", tc.path, code, err, out.String(), want)
		}
	}
}
