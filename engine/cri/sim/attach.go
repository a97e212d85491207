package sim

import (
	"context"
	"io"
	"os"
	"sync"

	"github.com/creack/pty"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// stdio is what attach connects to: a container process's input (the
// container spec's stdin: true), its terminal (tty: true), and the clients
// attached to its output.
type stdio struct {
	in   *os.File // the process's side: its stdin, and with a terminal its stdout and stderr too
	feed *os.File // where attached input goes: the pipe's other end, or the terminal's
	tty  bool
	once bool // stdinOnce: the input ends with the first attach's

	mu      sync.Mutex
	clients map[*attached]bool
}

// attached is one attach's output streams (errw nil on a terminal).
type attached struct{ out, errw io.Writer }

// newStdio gives a container the input and terminal its spec asks for
// (CRI's stdin, stdin_once and tty), when it runs a command.
func newStdio(cfg *runtimeapi.ContainerConfig, command bool) (*stdio, error) {
	s := &stdio{tty: cfg.GetTty() && command, once: cfg.GetStdinOnce(), clients: map[*attached]bool{}}
	var err error
	switch {
	case !command:
	case cfg.GetTty():
		s.feed, s.in, err = pty.Open()
	case cfg.GetStdin():
		s.in, s.feed, err = os.Pipe()
	}
	return s, err
}

// close releases the process's input and terminal.
func (s *stdio) close() {
	if s.in != nil {
		s.in.Close()
		s.feed.Close()
	}
}

// write passes a process's output to the attached clients.
func (s *stdio) write(stream string, p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for a := range s.clients {
		w := a.out
		if stream == "stderr" && a.errw != nil {
			w = a.errw
		}
		if w != nil {
			_, _ = w.Write(p)
		}
	}
}

// attach connects the caller's streams to the container's process, as
// kubectl attach does: its later output goes to out and errw, in (when
// the container has a stdin) to its input, until the container exits or
// ctx ends.
func (r *Runtime) attach(ctx context.Context, id string, in io.Reader, out, errw io.Writer) error {
	c, err := r.running(id, "attach to")
	if err != nil {
		return err
	}
	s := c.proc.stdio
	a := &attached{out: out, errw: errw}
	if s.tty {
		a.errw = nil
	}
	s.mu.Lock()
	s.clients[a] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.clients, a)
		s.mu.Unlock()
	}()
	if in != nil && s.feed != nil {
		go func() {
			_, _ = io.Copy(s.feed, in)
			if s.once && !s.tty {
				s.feed.Close() // the end of the process's input
			}
		}()
	}
	select {
	case <-c.proc.exited:
	case <-ctx.Done():
	}
	return nil
}

// outputOf is where the container's process writes: the log (and the
// attached clients), through its terminal when it has one.
func outputOf(s *stdio, stdout, stderr io.Writer) (in io.Reader, out, errw io.Writer, wait func()) {
	if !s.tty {
		if s.in != nil {
			in = s.in
		}
		return in, stdout, stderr, func() {}
	}
	copied := make(chan struct{})
	go func() {
		_, _ = io.Copy(stdout, s.feed) // what the process writes to its terminal
		close(copied)
	}()
	return s.in, s.in, s.in, func() {
		s.in.Close()
		<-copied
	}
}
