package proc

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// clusterDNS serves, on loopback, what CoreDNS answers for a cluster with
// Service default/web (10.96.12.34): its A record, no AAAA, its PTR, its
// port http's SRV, and NXDOMAIN for any other name, over UDP and TCP.
// exchange (and dial, for TCP) is pointed at it for 10.96.0.10, and
// finds 10.0.0.99 unreachable, for the test.
func clusterDNS(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		m.Authoritative = true
		q := r.Question[0]
		switch {
		case q.Name == "web.default.svc.cluster.local." && q.Qtype == dns.TypeA:
			rr, _ := dns.NewRR("web.default.svc.cluster.local. 5 IN A 10.96.12.34")
			m.Answer = append(m.Answer, rr)
		case q.Name == "_http._tcp.web.default.svc.cluster.local." && q.Qtype == dns.TypeSRV:
			rr, _ := dns.NewRR("_http._tcp.web.default.svc.cluster.local. 5 IN SRV 0 100 80 web.default.svc.cluster.local.")
			m.Answer = append(m.Answer, rr)
		case q.Name == "web.default.svc.cluster.local.":
		case q.Name == "34.12.96.10.in-addr.arpa." && q.Qtype == dns.TypePTR:
			rr, _ := dns.NewRR("34.12.96.10.in-addr.arpa. 5 IN PTR web.default.svc.cluster.local.")
			m.Answer = append(m.Answer, rr)
		default:
			m.Rcode = dns.RcodeNameError
		}
		_ = w.WriteMsg(m)
	})}
	go func() { _ = srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	// The same answers over TCP, where dial leads 10.96.0.10:53.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tcp := &dns.Server{Listener: l, Handler: srv.Handler}
	go func() { _ = tcp.ActivateAndServe() }()
	t.Cleanup(func() { _ = tcp.Shutdown() })
	savedDial := dial
	dial = func(ctx context.Context, network, addr string, timeout time.Duration) (net.Conn, error) {
		if network == "tcp" && addr == "10.96.0.10:53" {
			return (&net.Dialer{Timeout: timeout}).DialContext(ctx, network, l.Addr().String())
		}
		return savedDial(ctx, network, addr, timeout)
	}
	t.Cleanup(func() { dial = savedDial })
	saved := exchange
	exchange = func(ctx context.Context, addr string, m *dns.Msg, timeout time.Duration) (*dns.Msg, error) {
		if strings.HasPrefix(addr, "10.0.0.99:") {
			return nil, &net.OpError{Op: "dial", Net: "udp", Err: os.NewSyscallError("connect", syscall.ENETUNREACH)}
		}
		if addr != "10.96.0.10:53" {
			t.Errorf("query sent to %s", addr)
		}
		r, _, err := (&dns.Client{Timeout: timeout}).ExchangeContext(ctx, m, pc.LocalAddr().String())
		return r, err
	}
	t.Cleanup(func() { exchange = saved })
}

// pod is a container's file system with the resolv.conf and hosts file
// the kubelet and the runtime give a pod in namespace default.
func pod(t *testing.T, nameserver string) *FS {
	dir := t.TempDir()
	files := map[string]string{
		"resolv.conf": "search default.svc.cluster.local svc.cluster.local cluster.local\nnameserver " + nameserver + "\noptions ndots:5\n",
		"hosts": "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" +
			"fe00::0\tip6-localnet\n10.244.1.5\tclient\n",
	}
	var mounts []Mount
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		mounts = append(mounts, Mount{ContainerPath: "/etc/" + name, HostPath: filepath.Join(dir, name)})
	}
	return NewFS(mounts, false)
}

func TestNameLookups(t *testing.T) {
	clusterDNS(t)
	header := "Server:\t\t10.96.0.10\nAddress:\t10.96.0.10:53\n\n"
	web := "Name:\tweb.default.svc.cluster.local\nAddress: 10.96.12.34\n\n"
	for _, tc := range []struct {
		nameserver string
		argv       []string
		code       int
		stdout     string
		stderr     string
	}{
		// A name with a dot is asked as it is (A, then AAAA: none).
		{"10.96.0.10", []string{"nslookup", "web.default.svc.cluster.local"}, 0, header + web + "\n", ""},
		// One without is asked in every search domain, and every reply is printed.
		{"10.96.0.10", []string{"nslookup", "web"}, 1, header + web +
			"** server can't find web.svc.cluster.local: NXDOMAIN\n\n** server can't find web.cluster.local: NXDOMAIN\n\n\n" +
			"** server can't find web.svc.cluster.local: NXDOMAIN\n\n** server can't find web.cluster.local: NXDOMAIN\n\n", ""},
		// busybox's nslookup does not search for a name with a dot.
		{"10.96.0.10", []string{"nslookup", "web.default"}, 1, header +
			"** server can't find web.default: NXDOMAIN\n\n** server can't find web.default: NXDOMAIN\n\n", ""},
		{"10.96.0.10", []string{"nslookup", "10.96.12.34"}, 0, header +
			"34.12.96.10.in-addr.arpa\tname = web.default.svc.cluster.local\n\n", ""},
		{"10.96.0.10", []string{"nslookup", "-type=a", "web.default.svc.cluster.local"}, 0, header + web, ""},
		{"10.0.0.99", []string{"nslookup", "web"}, 1, "", "nslookup: can't connect to remote host (10.0.0.99): Network is unreachable\n"},
		{"10.96.0.10", []string{"nslookup"}, 1, "", nslookupUsage},
		// musl's rules: fewer dots than ndots, the search domains first.
		{"10.96.0.10", []string{"getent", "hosts", "web"}, 0,
			"10.96.12.34       web.default.svc.cluster.local  web.default.svc.cluster.local web\n", ""},
		{"10.96.0.10", []string{"getent", "hosts", "web.default.svc.cluster.local"}, 0,
			"10.96.12.34       web.default.svc.cluster.local  web.default.svc.cluster.local\n", ""},
		{"10.96.0.10", []string{"getent", "hosts", "10.96.12.34"}, 0,
			"10.96.12.34       web.default.svc.cluster.local  web.default.svc.cluster.local\n", ""},
		// /etc/hosts first, IPv6 before IPv4.
		{"10.96.0.10", []string{"getent", "hosts", "localhost"}, 0, "::1               localhost  localhost\n", ""},
		{"10.96.0.10", []string{"getent", "hosts", "client"}, 0, "10.244.1.5        client  client\n", ""},
		{"10.96.0.10", []string{"getent", "hosts", "nothere"}, 2, "", ""},
		{"10.0.0.99", []string{"getent", "hosts", "web"}, 2, "", ""},
		{"10.96.0.10", []string{"getent", "passwd", "root"}, 2, "", ""},
	} {
		code, stdout, stderr := run(t, pod(t, tc.nameserver), true, tc.argv...)
		if code != tc.code || stdout != tc.stdout || stderr != tc.stderr {
			t.Errorf("%q with nameserver %s: exit %d, stdout:\n%s\nstderr:\n%s\nwant exit %d, stdout:\n%s\nstderr:\n%s",
				tc.argv, tc.nameserver, code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
		}
	}
}

func TestReadResolvConf(t *testing.T) {
	for _, tc := range []struct {
		content        string
		servers        []string
		search, nssrch string
		ndots          int
	}{
		{"", []string{"127.0.0.1"}, "", "", 1},
		{"nameserver 10.96.0.10\nsearch a b\noptions ndots:5 timeout:2\n", []string{"10.96.0.10"}, "a b", "a b", 5},
		// musl takes the last of search and domain, busybox's nslookup a search line first.
		{"search a b\ndomain c\nnameserver 1.1.1.1\nnameserver 2.2.2.2\n", []string{"1.1.1.1", "2.2.2.2"}, "c", "a b", 1},
		{"domain c\noptions ndots:20\n", []string{"127.0.0.1"}, "c", "c", 15},
	} {
		dir := t.TempDir()
		mounts := []Mount{}
		if tc.content != "" {
			if err := os.WriteFile(filepath.Join(dir, "resolv.conf"), []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			mounts = append(mounts, Mount{ContainerPath: "/etc/resolv.conf", HostPath: filepath.Join(dir, "resolv.conf")})
		}
		rc := readResolvConf(NewFS(mounts, false))
		if strings.Join(rc.servers, ",") != strings.Join(tc.servers, ",") || strings.Join(rc.search, " ") != tc.search ||
			strings.Join(rc.nslookupSearch, " ") != tc.nssrch || rc.ndots != tc.ndots {
			t.Errorf("%q: %+v, want servers %v, search %q, nslookup's %q, ndots %d", tc.content, rc, tc.servers, tc.search, tc.nssrch, tc.ndots)
		}
	}
}
