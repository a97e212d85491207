package agnhost

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podtrace/podtrace/engine/cri/sim/proc"
)

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
		code, err := proc.Run(context.Background(), proc.Process{Programs: Programs(), Argv: tc.argv, FS: withResolvConf(t, "10.96.0.10"), Stdout: &out, Exec: true, Image: tc.image})
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
		code, err := proc.Run(context.Background(), proc.Process{Programs: Programs(), Argv: tc.argv, FS: fsys, Stdout: &out, Image: agnhostImage,
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
			sh(t, fsys, step.mv)
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
	fsys := proc.NewFS([]proc.Mount{{ContainerPath: "/mem", HostPath: mem, Type: "tmpfs"}, {ContainerPath: "/disk", HostPath: disk}}, false)
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
		code, err := proc.Run(context.Background(), proc.Process{Programs: Programs(), Argv: []string{"/agnhost", "mounttest", "--fs_type=" + tc.path}, FS: fsys,
			Stdout: &out, Image: agnhostImage})
		want := fmt.Sprintf("mount type of %q: %s\n", tc.path, tc.want)
		if err != nil || code != 0 || out.String() != want {
			t.Errorf("mounttest --fs_type=%s: exit %d (%v), stdout %q, want %q", tc.path, code, err, out.String(), want)
		}
	}
}

// kitten's and nautilus's test-webserver serve their data.json and
// picture on port 80, as kubectl's Update Demo reads data.json through
// the pod proxy.
func TestKittenAndNautilusServeTheirData(t *testing.T) {
	for _, tc := range []struct{ image, picture string }{{"registry.k8s.io/e2e-test-images/kitten:1.8", "kitten.jpg"},
		{"registry.k8s.io/e2e-test-images/nautilus:1.8", "nautilus.jpg"}} {
		n, _ := startPod(t, proc.NewFS(nil, false).WithImage(tc.image), tc.image, nil, 1, "/agnhost", "test-webserver")
		if got, want := ask(t, n, "http", 80, "/data.json"), "200 {\n  \"image\": \""+tc.picture+"\"\n}"; !strings.HasPrefix(got, want) {
			t.Errorf("%s: GET /data.json: %q, want %q", tc.image, got, want)
		}
		if got := ask(t, n, "http", 80, "/"+tc.picture); !strings.HasPrefix(got, "200 \xff\xd8") { // a JPEG's start
			t.Errorf("%s: GET /%s: %.20q, want a JPEG", tc.image, tc.picture, got)
		}
	}
}
