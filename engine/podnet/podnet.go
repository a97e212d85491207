// Package podnet gives simulated pods addresses that Kubernetes accepts
// and the real kubelet can reach, without root.
//
// The real kubelet dials a pod's IP itself (HTTP, TCP and gRPC probes,
// httpGet hooks), so a simulated pod must answer on it; and the
// EndpointSlice API refuses loopback addresses, so a pod IP of 127.x.y.z
// leaves every Service without endpoints. podnet resolves both on Linux:
// Reexec runs podtrace again in a user and network namespace of its own
// (as `unshare --user --map-root-user --net` does), where the pod CIDRs
// are local (routed to the namespace's loopback interface). Pods then
// answer on their real pod IPs (10.244.1.7), Services get endpoints, and
// nothing a pod serves is visible outside the namespace. Ports below 1024
// bind too: the namespace's root owns its network.
//
// What crosses the boundary: the parent binds the API server's address in
// the host's namespace and passes the listener on; the child serves it by
// forwarding each connection to the same address inside (Forward), so
// kubectl on the host reaches the cluster. Nothing inside can dial out to
// the host's loopback, so a cluster on an external etcd stays in the
// host's namespace (pods then fall back to loopback addresses, see
// engine/cri/sim).
//
// Elsewhere (macOS, or a Linux that forbids user namespaces) Reexec
// reports that it did not run, and podtrace runs as before.
package podnet

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
)

// envChild marks the re-executed child; its value is the host address of
// the listener passed as file descriptor 3, or noListener.
const envChild = "PODTRACE_PODNET"

const noListener = "-"

// child is envChild's value at start. It is taken out of the environment
// so that programs this one starts (kubectl, or another podtrace) do not
// take themselves for Reexec's child.
var child = os.Getenv(envChild)

func init() { os.Unsetenv(envChild) }

// Inside reports whether this process runs in a pod network namespace
// that Reexec made.
func Inside() bool { return child != "" }

// HostIP is host n's address on the namespace's node network, numbered as
// kind numbers its nodes' network: 1 is kube-apiserver's advertised
// address, the nodes start at 2 (172.18.0.2, 172.18.0.3, …). AddRange
// makes it local.
func HostIP(n int) net.IP { return net.IPv4(172, 18, byte(n/256), byte(n%256)) }

// ErrUnsupported is Reexec's answer where namespaces cannot be made.
var ErrUnsupported = errors.New("network namespaces need Linux")

var (
	hostOnce sync.Once
	hostLn   net.Listener
	hostErr  error
)

// HostListener returns the listener the parent bound in the host's
// namespace (nil outside a pod network namespace): the API server's
// address, to be served with Forward.
func HostListener() (net.Listener, error) {
	if !Inside() || child == noListener {
		return nil, nil
	}
	hostOnce.Do(func() {
		f := os.NewFile(3, "podtrace-api-listener")
		hostLn, hostErr = net.FileListener(f)
		f.Close()
	})
	return hostLn, hostErr
}

// Forward accepts connections on ln until ctx ends and copies each, both
// ways, to addr inside the namespace.
func Forward(ctx context.Context, ln net.Listener, addr string) { ForwardTo(ctx, ln, "tcp", addr) }

// ForwardTo accepts connections on ln until ctx ends and copies each, both
// ways, to a new connection to addr on network ("tcp", "unix").
func ForwardTo(ctx context.Context, ln net.Listener, network, addr string) {
	context.AfterFunc(ctx, func() { ln.Close() })
	var d net.Dialer
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			up, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return
			}
			defer up.Close()
			done := make(chan struct{})
			go func() { pipe(up, c); close(done) }()
			pipe(c, up)
			<-done
		}()
	}
}

// pipe copies from src to dst, then closes dst for writing.
func pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}
