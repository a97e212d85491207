package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/podtrace/podtrace/engine/podnet"
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
	go podnet.ForwardTo(ctx, ln, "tcp", s.HostPort())
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
	go podnet.ForwardTo(context.Background(), ln, "unix", path)
	os.Setenv(otlp.EnvTracesEndpoint, "http://"+ln.Addr().String())
	return nil
}
