package containerd

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"

	"github.com/podtrace/podtrace/engine/kubelet/runtime"
)

var _ runtime.Attacher = (*Runtime)(nil)

// Attach attaches the caller's streams to the running container's main
// process, as containerd's CRI attachContainer does: stdin goes to the
// process (when its spec has stdin), new output goes to the caller besides
// the log, terminal resizes apply; it returns when the container's output
// ends, the caller's output fails, ctx is done, or the caller's stdin ends
// (unless stdinOnce without a terminal, which closes the process's stdin
// and waits for its exit).
func (r *Runtime) Attach(ctx context.Context, id string, s runtime.ExecStreams) error {
	ctx = r.ctx(ctx)
	c, err := r.container(id)
	if err != nil {
		return err
	}
	c.mu.Lock()
	task, state, pio := c.task, c.status.State, c.io
	c.mu.Unlock()
	if task == nil || pio == nil {
		return fmt.Errorf("container is in %s state", state)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if s.Resize != nil {
		go forwardResize(ctx, task, s.Resize)
	}
	closeIO := func() { _ = task.CloseIO(context.WithoutCancel(ctx), client.WithStdinCloser) }
	pio.attach(ctx, s, closeIO)
	return nil
}

// containerIO is a container's main process IO: the write end of its stdin
// (nil unless the spec has stdin) and its output, fanned out to the log
// and to attached clients (containerd CRI's ContainerIO).
type containerIO struct {
	stdin          *io.PipeWriter
	stdinR         *io.PipeReader
	stdout, stderr *fanOut
	stdinOnce, tty bool
	ended          chan struct{} // closed when the process's output has ended
}

// newContainerIO is the IO of a task of a container with cfg, logging to
// book.
func newContainerIO(cfg runtime.ContainerConfig, book *logBook) *containerIO {
	x := &containerIO{stdinOnce: cfg.StdinOnce, tty: cfg.TTY, ended: make(chan struct{}),
		stdout: &fanOut{log: &lineWriter{book: book, stream: "stdout"}},
		stderr: &fanOut{log: &lineWriter{book: book, stream: "stderr"}}}
	if cfg.Stdin {
		x.stdinR, x.stdin = io.Pipe()
	}
	return x
}

// creator makes the task's IO: the streams, a terminal with tty, FIFOs in
// dir.
func (x *containerIO) creator(dir string) cio.Creator {
	opts := []cio.Opt{cio.WithStreams(readerOrNil(x.stdinR), x.stdout, x.stderr), cio.WithFIFODir(dir)}
	if x.tty {
		opts = append(opts, cio.WithTerminal)
	}
	return cio.NewCreator(opts...)
}

// end is called once the task is gone and its output copied: the log's
// last lines are written, the stdin pipe closed and attaches end.
func (x *containerIO) end() {
	x.stdout.end()
	x.stderr.end()
	if x.stdinR != nil {
		x.stdinR.CloseWithError(io.ErrClosedPipe) // clients still sending input do not block
	}
	close(x.ended)
}

// attach copies s's streams to and from the process until the attach ends
// (see Runtime.Attach); closeIO closes the process's stdin on containerd's
// side.
func (x *containerIO) attach(ctx context.Context, s runtime.ExecStreams, closeIO func()) {
	var outGone, errGone, stdinDone <-chan struct{}
	if s.Stdout != nil {
		gone, remove := x.stdout.add(s.Stdout)
		defer remove()
		outGone = gone
	}
	if s.Stderr != nil && !x.tty {
		gone, remove := x.stderr.add(s.Stderr)
		defer remove()
		errGone = gone
	}
	if x.stdin != nil && s.Stdin != nil {
		done := make(chan struct{})
		go x.feedStdin(s.Stdin, done, closeIO)
		stdinDone = done
	}
	// As containerd's ContainerIO.Attach, an attach with nothing left to
	// copy returns at once.
	for outGone != nil || errGone != nil || stdinDone != nil {
		select {
		case <-ctx.Done():
			return
		case <-x.ended:
			return
		case <-outGone:
			return
		case <-errGone:
			return
		case <-stdinDone:
			if !x.stdinOnce || x.tty {
				return
			}
			stdinDone = nil // stdin closed: wait for the output to end
		}
	}
}

// feedStdin feeds a client's input to the process; at its end a stdinOnce
// container without a terminal has its stdin closed, so it reads EOF.
func (x *containerIO) feedStdin(in io.Reader, done chan<- struct{}, closeIO func()) {
	defer close(done)
	_, _ = io.Copy(x.stdin, in)
	if x.stdinOnce && !x.tty {
		_ = x.stdin.Close()
		closeIO()
	}
}

// fanOut writes one output stream of a process to its log and to the
// attached clients; a client whose write fails is dropped, as containerd's
// WriterGroup does.
type fanOut struct {
	log *lineWriter

	mu      sync.Mutex
	clients map[*attached]struct{}
	ended   bool
}

// attached is one client of a fanOut; gone is closed when it is dropped.
type attached struct {
	w    io.Writer
	gone chan struct{}
}

// Write logs p and copies it to every client.
func (f *fanOut) Write(p []byte) (int, error) {
	_, _ = f.log.Write(p)
	f.mu.Lock()
	defer f.mu.Unlock()
	for a := range f.clients {
		if _, err := a.w.Write(p); err != nil {
			f.dropLocked(a)
		}
	}
	return len(p), nil
}

// add attaches w until remove is called or the stream ends (gone closed).
func (f *fanOut) add(w io.Writer) (gone <-chan struct{}, remove func()) {
	a := &attached{w: w, gone: make(chan struct{})}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended {
		close(a.gone)
		return a.gone, func() {}
	}
	if f.clients == nil {
		f.clients = map[*attached]struct{}{}
	}
	f.clients[a] = struct{}{}
	return a.gone, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.dropLocked(a)
	}
}

// dropLocked removes a client still attached; f.mu is held.
func (f *fanOut) dropLocked(a *attached) {
	if _, ok := f.clients[a]; ok {
		delete(f.clients, a)
		close(a.gone)
	}
}

// end writes the log's unterminated last line and drops every client.
func (f *fanOut) end() {
	f.log.flush()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ended = true
	for a := range f.clients {
		f.dropLocked(a)
	}
}
