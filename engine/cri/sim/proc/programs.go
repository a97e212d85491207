package proc

import (
	"context"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"mvdan.cc/sh/v3/interp"

	"github.com/podtrace/podtrace/engine/podnet"
)

// A Program is a simulated program that images have beyond busybox's
// applets (agnhost's, in engine/cri/sim/agnhost). It runs as p, the
// process that runs it: p.Argv is its whole command line, p.Env its
// environment, p.Stdin, p.Stdout, p.Stderr and p.Dir the caller's (a
// shell's, when a script runs it). It returns the exit status, or ctx's
// error instead when ctx ends first, as Run does.
type Program func(ctx context.Context, p Process) (code int, err error)

// Programs are the programs a process may run besides busybox's applets,
// by command name (the last element of argv[0]). A container's command
// finds one only when its image has it (see knownImages); otherwise the
// name is an unknown command's.
type Programs map[string]Program

// Network is where a container's servers listen: its pod's address, and
// the host ports mapped to the container's ports. The simulated runtime
// gives each container its pod's.
type Network interface {
	// Listen opens TCP listeners for port: on the pod's address, and on
	// the host ports mapped to it. It returns those it opened, and an
	// error when the pod's address could not be bound.
	Listen(port int) ([]net.Listener, error)
	// ListenPacket opens UDP sockets for port, as Listen does.
	ListenPacket(port int) ([]net.PacketConn, error)
}

// A Dialer is a Network that also carries the container's own
// connections (tests lead a pod's addresses to loopback with one). A
// Network that is not a Dialer leaves them to podtrace's pod network
// namespace (see Process.Dial).
type Dialer interface {
	// Dial connects to addr (IP:port) over network ("tcp" or "udp")
	// within timeout.
	Dial(ctx context.Context, network, addr string, timeout time.Duration) (net.Conn, error)
}

// dial opens a connection over network ("tcp" or "udp") to addr
// (IP:port) for a process whose Network is no Dialer. As with exchange,
// only in podtrace's pod network namespace does a connection leave the
// process (to a pod's address, or a Service's, which kube-proxy's rules
// lead to one); elsewhere the network is unreachable.
var dial = func(ctx context.Context, network, addr string, timeout time.Duration) (net.Conn, error) {
	if !podnet.Inside() {
		return nil, &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("connect", syscall.ENETUNREACH)}
	}
	return (&net.Dialer{Timeout: timeout}).DialContext(ctx, network, addr)
}

// Dial opens a connection from the container over network ("tcp" or
// "udp") to addr (IP:port) within timeout: the simulated programs' only
// way to a server, through p.Net when it is a Dialer.
func (p Process) Dial(ctx context.Context, network, addr string, timeout time.Duration) (net.Conn, error) {
	if d, ok := p.Net.(Dialer); ok {
		return d.Dial(ctx, network, addr, timeout)
	}
	return dial(ctx, network, addr, timeout)
}

// Resolve is host's IPv4 address as the container's resolver finds it
// (/etc/hosts, then the cluster's DNS, as musl asks), or nil; an address
// is itself.
func (p Process) Resolve(ctx context.Context, host string) net.IP {
	return (&commands{p: p}).resolve(ctx, host)
}

// Getenv is the value of the variable key in p.Env, "" when unset.
func (p Process) Getenv(key string) string {
	for i := len(p.Env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(p.Env[i], key+"="); ok {
			return v
		}
	}
	return ""
}

// Abs is the container's path name, made absolute against p.Dir and
// cleaned.
func (p Process) Abs(name string) string { return abs(p.Dir, name) }

// Unknown is what a command the simulation does not know does: under
// exec it succeeds at once, as a container's process it runs until ctx
// ends (it is taken for a server) and returns ctx's error.
func (p Process) Unknown(ctx context.Context) (int, error) {
	if p.Exec {
		return 0, nil
	}
	<-ctx.Done()
	return 0, ctx.Err()
}

// program runs prog, one of p.Programs, for the shell: as the process
// args with the shell's streams, directory and exported variables.
func (c *commands) program(ctx context.Context, hc interp.HandlerContext, prog Program, args []string) error {
	code, err := prog(ctx, c.process(hc, args, environ(hc.Env)))
	if err != nil {
		return err
	}
	return exitStatus(code)
}
