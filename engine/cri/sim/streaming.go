package sim

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"

	"github.com/creack/pty"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming"
	remotecommandserver "k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

// Exec, Attach and PortForward answer as containerd's CRI does: with the
// URL of the runtime's streaming server (cri-streaming, on loopback), which
// the kubelet proxies kube-apiserver's stream to. There an exec runs its
// command in the simulated container (engine/cri/sim/proc), an attach
// connects to its process, and a port forward reaches the pod's address,
// where the runtime answers for the pod.

// Exec returns the URL of an exec stream.
func (r *Runtime) Exec(_ context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	if err := r.knownContainer(req.GetContainerId()); err != nil {
		return nil, err
	}
	s, err := r.streams()
	if err != nil {
		return nil, err
	}
	return s.GetExec(req)
}

// Attach returns the URL of an attach stream.
func (r *Runtime) Attach(_ context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	if err := r.knownContainer(req.GetContainerId()); err != nil {
		return nil, err
	}
	s, err := r.streams()
	if err != nil {
		return nil, err
	}
	return s.GetAttach(req)
}

// PortForward returns the URL of a port-forward stream to the sandbox.
func (r *Runtime) PortForward(_ context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	r.mu.Lock()
	_, ok := r.sandboxes[req.GetPodSandboxId()]
	r.mu.Unlock()
	if !ok {
		return nil, notFound("sandbox", req.GetPodSandboxId())
	}
	s, err := r.streams()
	if err != nil {
		return nil, err
	}
	return s.GetPortForward(req)
}

func (r *Runtime) knownContainer(id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.containers[id]; !ok {
		return notFound("container", id)
	}
	return nil
}

// streams starts the streaming server on a loopback port at first use.
func (r *Runtime) streams() (streaming.Server, error) {
	r.streamOnce.Do(func() {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			r.streamErr = err
			return
		}
		cfg := streaming.DefaultConfig
		cfg.Addr = l.Addr().String()
		cfg.BaseURL = &url.URL{Scheme: "http", Host: cfg.Addr}
		s, err := streaming.NewServer(cfg, streamRuntime{r})
		if err != nil {
			l.Close()
			r.streamErr = err
			return
		}
		r.stream, r.streamListener = s, l
		go func() { _ = http.Serve(l, s) }()
	})
	return r.stream, r.streamErr
}

// stopStreams closes the streaming server's port, if it was opened.
func (r *Runtime) stopStreams() {
	r.streamOnce.Do(func() { r.streamErr = fmt.Errorf("%s: stopped", RuntimeName) })
	if r.streamListener != nil {
		r.streamListener.Close()
	}
}

// streamRuntime serves the streams the streaming server accepted.
type streamRuntime struct{ r *Runtime }

// Exec runs cmd in the container with the stream's input and output, as
// engine/cri/sim/proc runs a command, on a pseudo-terminal of its own when
// the stream asks for one (kubectl exec -t), and reports a non-zero exit
// status as containerd does, so kubectl exits with it ("command terminated
// with exit code 3").
func (s streamRuntime) Exec(ctx context.Context, id string, cmd []string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommandserver.TerminalSize) error {
	var stdout, stderr io.Writer = io.Discard, io.Discard
	if out != nil {
		stdout = out
	}
	if errw != nil {
		stderr = errw
	}
	run := func(in io.Reader, out, errw io.Writer) (int, error) {
		return s.r.exec(ctx, id, cmd, in, out, errw, tty)
	}
	var code int
	var err error
	if tty {
		code, err = onTerminal(ctx, in, stdout, resize, run)
	} else {
		code, err = run(in, stdout, stderr)
	}
	if err != nil {
		return criError(err)
	}
	if code != 0 {
		return utilexec.CodeExitError{Err: fmt.Errorf("command terminated with non-zero exit code: exit status %d", code), Code: code}
	}
	return nil
}

// onTerminal runs a process on a new pseudo-terminal: the stream's input
// goes to it, its output back to out, and the stream's resizes set its
// size. The terminal echoes and edits lines as a container's would.
func onTerminal(ctx context.Context, in io.Reader, out io.Writer, resize <-chan remotecommandserver.TerminalSize, run func(io.Reader, io.Writer, io.Writer) (int, error)) (int, error) {
	ptm, pts, err := pty.Open()
	if err != nil {
		return 0, status.Errorf(codes.Unknown, "failed to open a terminal: %v", err)
	}
	defer ptm.Close()
	go func() {
		for size := range resize {
			_ = pty.Setsize(ptm, &pty.Winsize{Rows: size.Height, Cols: size.Width})
		}
	}()
	if in != nil {
		go func() {
			_, _ = io.Copy(ptm, in)
			_, _ = ptm.Write([]byte{4}) // the client is gone: ^D, the end of the input
		}()
	}
	copied := make(chan struct{})
	go func() {
		_, _ = io.Copy(out, ptm) // until the process's side is closed
		close(copied)
	}()
	ended := make(chan struct{})
	defer close(ended)
	go func() {
		select {
		case <-ctx.Done(): // the stream ended: no one reads the terminal any more
			pts.Close()
		case <-ended:
		}
	}()
	code, err := run(pts, pts, pts)
	pts.Close()
	<-copied
	return code, err
}

// Attach connects the stream to the container's process, as containerd
// does: its output from now on, and its input or terminal when the
// container has one (stdin: true, tty: true), until it exits.
func (s streamRuntime) Attach(ctx context.Context, id string, in io.Reader, out, errw io.WriteCloser, _ bool, _ <-chan remotecommandserver.TerminalSize) error {
	var stdout, stderr io.Writer
	if out != nil {
		stdout = out
	}
	if errw != nil {
		stderr = errw
	}
	return criError(s.r.attach(ctx, id, in, stdout, stderr))
}

// PortForward connects stream to port on the sandbox's address, where the
// runtime answers for the pod, until either side ends.
func (s streamRuntime) PortForward(ctx context.Context, sandboxID string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	s.r.mu.Lock()
	sb, ok := s.r.sandboxes[sandboxID]
	ip := ""
	if ok && sb.ready {
		ip = sb.ip
	}
	s.r.mu.Unlock()
	if ip == "" {
		return fmt.Errorf("failed to find sandbox %q in store: not ready", sandboxID)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(ip, strconv.Itoa(int(port))))
	if err != nil {
		return fmt.Errorf("failed to connect to localhost:%d inside namespace %q: %w", port, sandboxID, err)
	}
	defer conn.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(conn, stream); done <- struct{}{} }()
	go func() { _, _ = io.Copy(stream, conn); done <- struct{}{} }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	return nil
}
