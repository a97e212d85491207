package proc

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"syscall"
	"testing"
	"time"
)

// webService serves h as web's Service, 10.96.12.34:80, on loopback and
// points dial there. 10.96.0.99:80 refuses, as a Service without ready
// endpoints does, and 10.96.0.98:80 times out, after a dial that must
// have asked for connectTimeout. A dial anywhere else fails the test.
func webService(t *testing.T, connectTimeout time.Duration, h http.HandlerFunc) {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	saved := dial
	dial = func(ctx context.Context, _, addr string, timeout time.Duration) (net.Conn, error) {
		switch addr {
		case "10.96.12.34:80":
			return (&net.Dialer{Timeout: timeout}).DialContext(ctx, "tcp", srv.Listener.Addr().String())
		case "10.96.0.99:80":
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
		case "10.96.0.98:80":
			if timeout != connectTimeout {
				t.Errorf("connected to %s with a timeout of %v, want %v", addr, timeout, connectTimeout)
			}
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}
		}
		t.Errorf("dialed %s", addr)
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ENETUNREACH)}
	}
	t.Cleanup(func() { dial = saved })
}
