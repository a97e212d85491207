package sim

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podtrace/podtrace/engine/cri/sim/proc"
	"github.com/podtrace/podtrace/internal/syncbuf"
)

// maxLineBytes is where a line without its end is logged in parts:
// containerd's default (max_container_log_line_size).
const maxLineBytes = 16 << 10

// execSync runs cmd in the container, as an exec probe or hook does (see
// engine/cri/sim/proc), and returns its output and exit status; past
// timeout (when positive) it gives up, as containerd does.
func (r *Runtime) execSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (stdout, stderr string, code int, err error) {
	p, err := r.execProcess(id, cmd)
	if err != nil {
		return "", "", 0, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var timedOut atomic.Bool
	if timeout > 0 {
		t := r.timing.Clock.NewTimer(timeout)
		defer t.Stop()
		go func() {
			select {
			case <-t.C():
				timedOut.Store(true)
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	var out, errw syncbuf.Buffer
	p.Stdout, p.Stderr = &out, &errw
	code, err = proc.Run(ctx, p)
	if err != nil {
		if timedOut.Load() {
			return "", "", 0, fmt.Errorf("command %q timed out", cmd)
		}
		return "", "", 0, err
	}
	return out.String(), errw.String(), code, nil
}

// exec runs cmd in the container with the caller's streams, as kubectl
// exec does, until it exits or ctx ends, and returns its exit status;
// terminal says the streams are a terminal's.
func (r *Runtime) exec(ctx context.Context, id string, cmd []string, stdin io.Reader, stdout, stderr io.Writer, terminal bool) (int, error) {
	p, err := r.execProcess(id, cmd)
	if err != nil {
		return 0, err
	}
	p.Stdin, p.Stdout, p.Stderr, p.Terminal = stdin, stdout, stderr, terminal
	return proc.Run(ctx, p)
}

// execProcess is cmd as a process of the running container id.
func (r *Runtime) execProcess(id string, cmd []string) (proc.Process, error) {
	c, err := r.running(id, "exec in")
	if err != nil {
		return proc.Process{}, err
	}
	p := r.process(c.proc, cmd)
	p.Exec = true
	return p, nil
}

// running returns container id if it is running, or containerd's error
// for what failed to verb it ("exec in", "attach to"). A container
// restored from before a restart has no process: it is not found.
func (r *Runtime) running(id, verb string) (*container, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[id]
	if !ok || c.proc == nil {
		return nil, status.Errorf(codes.NotFound, "container %q: not found", id)
	}
	if s := c.status.State; s != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return nil, status.Errorf(codes.Unknown, "failed to %s container: container is in %s state", verb, s)
	}
	return c, nil
}

// environ lists env as KEY=value, sorted.
func environ(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// logWriter turns a container's output into lines of its log file, one
// per line written, and passes it to the attached clients.
type logWriter struct {
	r       *Runtime
	c       *container
	stream  string
	mu      sync.Mutex
	partial []byte
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.c.proc.stdio.write(w.stream, p)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 && len(w.partial) >= maxLineBytes {
			// A long line is logged in parts, as containerd splits it.
			w.line(string(w.partial[:maxLineBytes]), true)
			w.partial = w.partial[maxLineBytes:]
			continue
		}
		if i < 0 {
			return len(p), nil
		}
		w.line(string(w.partial[:i]), false)
		w.partial = w.partial[i+1:]
	}
}

// flush logs what is left of an unfinished line, as a partial one.
func (w *logWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.partial) > 0 {
		w.line(string(w.partial), true)
		w.partial = nil
	}
}

func (w *logWriter) line(text string, partial bool) {
	w.r.mu.Lock()
	l := w.c.log
	w.r.mu.Unlock()
	l.write(w.r.timing.Clock.Now(), w.stream, strings.TrimSuffix(text, "\r"), partial)
}
