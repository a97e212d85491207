package containerd

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/podtrace/podtrace/engine/kubelet/network/cni/netns"
	"github.com/podtrace/podtrace/engine/kubelet/runtime"
)

var _ runtime.PortForwarder = (*Runtime)(nil)

// PortForward connects to localhost:port inside the network namespace of
// the pod's newest sandbox and copies bytes both ways, as containerd's CRI
// portForward does: IPv4 first, then IPv6 (addresses, not a name, so no
// resolver goroutine dials outside the namespace); after one direction
// ends, up to a second for the other.
func (r *Runtime) PortForward(ctx context.Context, podUID string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	id, ns, err := r.podNetNS(podUID)
	if err != nil {
		return err
	}
	var conn net.Conn
	err = netns.Do(ns, func() error {
		var err4, err6 error
		if conn, err4 = net.Dial("tcp4", fmt.Sprintf("127.0.0.1:%d", port)); err4 == nil {
			return nil
		}
		if conn, err6 = net.Dial("tcp6", fmt.Sprintf("[::1]:%d", port)); err6 == nil {
			return nil
		}
		return fmt.Errorf("failed to connect to localhost:%d inside namespace %q, IPv4: %v IPv6 %v ", port, id, err4, err6)
	})
	if err == nil {
		err = copyBothWays(ctx, conn, stream)
	}
	if err != nil {
		return fmt.Errorf("failed to execute portforward in network namespace %q: %w", ns, err)
	}
	return nil
}

// podNetNS finds the network namespace of the pod's newest sandbox, as the
// kubelet picks the pod's sandbox for CRI PortForward.
func (r *Runtime) podNetNS(podUID string) (id, ns string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var newest *sandbox
	for _, sb := range r.sandboxes {
		if sb.cfg.UID == podUID && (newest == nil || sb.cfg.Attempt > newest.cfg.Attempt) {
			newest = sb
		}
	}
	if newest == nil || newest.netns == "" {
		return "", "", fmt.Errorf("rpc error: code = NotFound desc = no sandbox for pod %q: %w", podUID, runtime.ErrNotFound)
	}
	return newest.id, newest.netns, nil
}

// copyBothWays copies between conn and stream until one direction ends,
// then gives the other up to a second (socat's timeout), and closes conn.
func copyBothWays(ctx context.Context, conn net.Conn, stream io.ReadWriter) error {
	defer conn.Close()
	errc := make(chan error, 2)
	go func() { _, err := io.Copy(stream, conn); errc <- err }()
	go func() { _, err := io.Copy(conn, stream); errc <- err }()
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case e := <-errc:
		if err == nil {
			err = e
		}
	case <-time.After(time.Second):
	case <-ctx.Done():
		err = ctx.Err()
	}
	return err
}
