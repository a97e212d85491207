package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"

	"github.com/podtrace/podtrace/export/otlp"
)

// envOTLPSocket names, for a child in a pod network namespace
// (engine/podnet), the unix socket through which it reaches the OTLP
// endpoint on the host: nothing inside the namespace can dial the host's
// loopback, but a socket file is reachable from both sides.
const envOTLPSocket = "PODTRACE_OTLP_SOCKET"

// forwardOTLPFromHost, when the OpenTelemetry environment asks for trace
// export, serves a unix socket that forwards each connection to the
// endpoint, and names it in the environment the child inherits. stop
// (never nil) closes it once the child has exited.
func forwardOTLPFromHost() (stop func(), err error) {
	s, err := otlp.FromEnv(nil)
	if err != nil || !s.Enabled() {
		return func() {}, err
	}
	dir, err := os.MkdirTemp("", "podtrace-otlp-")
	if err != nil {
		return nil, fmt.Errorf("OTLP forwarder: %w", err)
	}
	path := filepath.Join(dir, "otlp.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("OTLP forwarder: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go forward(ctx, ln, "tcp", s.HostPort())
	os.Setenv(envOTLPSocket, path)
	return func() { cancel(); os.RemoveAll(dir) }, nil
}

// forwardOTLPInside, in a pod network namespace whose parent forwards
// OTLP (forwardOTLPFromHost), listens on the namespace's loopback,
// forwards to the parent's socket, and points the OTLP environment there,
// so that podtrace's export and the components' own tracing reach the
// endpoint the user gave. Plain text inside: the endpoint's TLS, if any,
// cannot be carried through a loopback address.
func forwardOTLPInside() error {
	path := os.Getenv(envOTLPSocket)
	os.Unsetenv(envOTLPSocket) // not for programs this one starts
	if path == "" {
		return nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("OTLP forwarder: %w", err)
	}
	go forward(context.Background(), ln, "unix", path)
	os.Setenv(otlp.EnvTracesEndpoint, "http://"+ln.Addr().String())
	return nil
}

// forward copies each connection accepted on ln to a new connection to
// network addr, both ways, until ctx ends.
func forward(ctx context.Context, ln net.Listener, network, addr string) {
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
