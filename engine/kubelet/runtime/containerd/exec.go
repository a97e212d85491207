package containerd

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"syscall"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/opencontainers/runtime-spec/specs-go"

	"github.com/podtrace/podtrace/engine/kubelet/runtime"
)

var _ runtime.Execer = (*Runtime)(nil)

// Exec runs cmd in the running container with the caller's streams (task
// exec with the container's process settings, a terminal when s.TTY),
// forwarding resizes, until the command exits.
func (r *Runtime) Exec(ctx context.Context, id string, cmd []string, s runtime.ExecStreams) (int, error) {
	ctx = r.ctx(ctx)
	task, pspec, err := r.execSpec(ctx, id, cmd, s.TTY)
	if err != nil {
		return 0, err
	}
	var stdin *io.PipeReader
	var stdinW *io.PipeWriter
	if s.Stdin != nil {
		stdin, stdinW = io.Pipe()
	}
	opts := []cio.Opt{cio.WithStreams(readerOrNil(stdin), s.Stdout, s.Stderr), cio.WithFIFODir(filepath.Join(r.cfg.Dir, "fifo"))}
	if s.TTY {
		opts = append(opts, cio.WithTerminal)
	}
	execID := "exec-" + newID()[:16]
	p, err := task.Exec(ctx, execID, pspec, cio.NewCreator(opts...))
	if err != nil {
		return 0, fmt.Errorf("rpc error: code = Unknown desc = failed to exec in container: %w", err)
	}
	defer func() { _, _ = p.Delete(context.WithoutCancel(ctx), client.WithProcessKill) }()
	if stdin != nil {
		// Once the process is gone nobody reads the pipe: a client still
		// sending input must not block copyStdin for ever.
		defer stdin.CloseWithError(io.ErrClosedPipe)
	}
	ch, err := p.Wait(ctx)
	if err != nil {
		return 0, fmt.Errorf("rpc error: code = Unknown desc = failed to exec in container: %w", err)
	}
	if err := p.Start(ctx); err != nil {
		return 0, fmt.Errorf("rpc error: code = Unknown desc = failed to exec in container: failed to start exec %q: %w", execID, err)
	}
	if stdinW != nil {
		go copyStdin(ctx, p, stdinW, s.Stdin)
	}
	if s.Resize != nil {
		go forwardResize(ctx, p, s.Resize)
	}
	select {
	case st := <-ch:
		code, _, err := st.Result()
		if err != nil {
			return 0, fmt.Errorf("rpc error: code = Unknown desc = failed to exec in container: %w", err)
		}
		waitIO(ctx, p.IO()) // output fully copied
		return int(code), nil
	case <-ctx.Done():
		_ = p.Kill(context.WithoutCancel(ctx), syscall.SIGKILL)
		return 0, ctx.Err()
	}
}

// execSpec finds the running task of container id and the process spec of
// an exec of cmd in it (the container's own process settings).
func (r *Runtime) execSpec(ctx context.Context, id string, cmd []string, tty bool) (client.Task, *specs.Process, error) {
	c, err := r.container(id)
	if err != nil {
		return nil, nil, err
	}
	c.mu.Lock()
	task, state := c.task, c.status.State
	c.mu.Unlock()
	if task == nil {
		return nil, nil, fmt.Errorf("rpc error: code = Unknown desc = failed to exec in container: container is in %s state", state)
	}
	spec, err := c.ctr.Spec(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("rpc error: code = Unknown desc = failed to load container spec: %w", err)
	}
	pspec := *spec.Process
	pspec.Args, pspec.Terminal = cmd, tty
	return task, &pspec, nil
}

// copyStdin feeds the caller's stdin to the process and, at its end, closes
// the process's stdin so it reads EOF (ctr's CloseIO).
func copyStdin(ctx context.Context, p client.Process, w *io.PipeWriter, in io.Reader) {
	_, _ = io.Copy(w, in)
	_ = w.Close()
	_ = p.CloseIO(context.WithoutCancel(ctx), client.WithStdinCloser)
}

// waitIO waits until the process's output is copied, or ctx is done.
func waitIO(ctx context.Context, pio cio.IO) {
	done := make(chan struct{})
	go func() {
		pio.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// forwardResize applies terminal resizes until the channel closes.
func forwardResize(ctx context.Context, p client.Process, resize <-chan runtime.TerminalSize) {
	for size := range resize {
		_ = p.Resize(ctx, uint32(size.Width), uint32(size.Height))
	}
}

// readerOrNil keeps an absent stdin a nil interface for cio.
func readerOrNil(r *io.PipeReader) io.Reader {
	if r == nil {
		return nil
	}
	return r
}
