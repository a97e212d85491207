package proc

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// ncServices serves, on loopback, web's Service 10.96.12.34:80 as nc's
// tests reach it: over TCP it answers "hello " and all the client sent,
// once the client has sent all, then closes; over UDP it answers each
// datagram so. dial is pointed there; 10.96.0.99:80 refuses (a closed
// loopback port) and 10.96.0.98:80 times out, once the -w of 2 s passed.
func ncServices(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tcp.Close() })
	go func() {
		for {
			conn, err := tcp.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				if b, _ := io.ReadAll(conn); len(b) > 0 {
					fmt.Fprintf(conn, "hello %s", b)
				}
			}()
		}
	}()
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { udp.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := udp.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = udp.WriteTo(append([]byte("hello "), buf[:n]...), from)
		}
	}()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	saved := dial
	dial = func(ctx context.Context, network, addr string, timeout time.Duration) (net.Conn, error) {
		to := map[string]string{"tcp 10.96.12.34:80": tcp.Addr().String(), "udp 10.96.12.34:80": udp.LocalAddr().String(),
			"tcp 10.96.0.99:80": closed.Addr().String()}[network+" "+addr]
		switch {
		case to != "":
			return (&net.Dialer{Timeout: timeout}).DialContext(ctx, network, to)
		case addr == "10.96.0.98:80" && timeout == 2*time.Second:
			return nil, &net.OpError{Op: "dial", Net: network, Err: os.ErrDeadlineExceeded}
		}
		t.Errorf("nc dialed %s %s (timeout %v)", network, addr, timeout)
		return nil, &net.OpError{Op: "dial", Net: network, Err: os.ErrInvalid}
	}
	t.Cleanup(func() { dial = saved })
}

func TestNc(t *testing.T) {
	clusterDNS(t)
	ncServices(t)
	for _, tc := range []struct {
		argv   []string
		code   int
		stdout string
		stderr string
	}{
		// The conformance suite's checks of a Service, over TCP and UDP.
		{[]string{"sh", "-c", "echo hostName | nc -v -t -w 2 web 80"}, 0, "hello hostName\n", "web (10.96.12.34:80) open\n"},
		{[]string{"sh", "-c", "echo hostName | nc -v -u -w 1 10.96.12.34 80"}, 0, "hello hostName\n",
			"10.96.12.34 (10.96.12.34:80) open\n"},
		{[]string{"sh", "-c", "echo hostName | nc -w 5 web.default.svc.cluster.local 80"}, 0, "hello hostName\n", ""},
		{[]string{"nc", "-vz", "-w", "2", "web", "80"}, 0, "", "web (10.96.12.34:80) open\n"},
		{[]string{"nc", "-z", "web", "80", "-w2"}, 0, "", ""},
		{[]string{"nc", "-zuv", "-w", "1", "--", "web", "80"}, 0, "", "web (10.96.12.34:80) open\n"},
		{[]string{"sh", "-c", "echo hostName | nc -v -w 2 10.96.0.99 80"}, 1, "",
			"nc: can't connect to remote host (10.96.0.99): Connection refused\n"},
		{[]string{"nc", "-w", "2", "10.96.0.98", "80"}, 1, "", "nc: can't connect to remote host (10.96.0.98): Connection timed out\n"},
		{[]string{"nc", "nothere", "80"}, 1, "", "nc: bad address 'nothere'\n"},
		{[]string{"nc", "web"}, 1, "", ncUsage},
		{[]string{"nc", "-w", "x", "web", "80"}, 1, "", "nc: invalid number 'x'\n"},
		{[]string{"nc", "-q", "web", "80"}, 1, "", "nc: invalid option -- 'q'\n" + ncUsage},
		// A listener is a server: under exec it succeeds at once, as any.
		{[]string{"nc", "-l", "-p", "8080"}, 0, "", ""},
	} {
		code, stdout, stderr := run(t, pod(t, "10.96.0.10"), true, tc.argv...)
		if code != tc.code || stdout != tc.stdout || stderr != tc.stderr {
			t.Errorf("%q: exit %d, stdout:\n%s\nstderr:\n%s\nwant exit %d, stdout:\n%s\nstderr:\n%s",
				tc.argv, code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
		}
	}
}
