package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

// ExecFunc runs cmd in the container a Host's Exec found, with the given
// process IO (nil stdin, stdout or stderr: not requested), and returns the
// command's exit code.
type ExecFunc func(ctx context.Context, cmd []string, stdin io.Reader, stdout, stderr io.Writer, tty bool, resize <-chan remotecommand.TerminalSize) (int, error)

// AttachFunc attaches the given streams (nil: not requested) to the main
// process of the container a Host's Attach found until either side ends;
// tty is the container's own setting.
type AttachFunc func(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, tty bool, resize <-chan remotecommand.TerminalSize) error

// PortForwardFunc copies bytes both ways between stream and port on the
// pod's loopback until either side ends (CRI PortForward's streaming side).
type PortForwardFunc func(ctx context.Context, port int32, stream io.ReadWriteCloser) error

var (
	// ErrExecUnimplemented is what a CRI runtime without Exec answers
	// (gRPC's Unimplemented status from the generated server stub).
	ErrExecUnimplemented = errors.New("rpc error: code = Unimplemented desc = method Exec not implemented")
	// ErrAttachUnimplemented is what a CRI runtime without Attach answers.
	ErrAttachUnimplemented = errors.New("rpc error: code = Unimplemented desc = method Attach not implemented")
	// ErrPortForwardUnimplemented is what a CRI runtime without PortForward
	// answers.
	ErrPortForwardUnimplemented = errors.New("rpc error: code = Unimplemented desc = method PortForward not implemented")

	// errAttachTTYStderr is the CRI streaming server's answer to an attach
	// asking for stderr from a container with a terminal.
	errAttachTTYStderr = errors.New("rpc error: code = InvalidArgument desc = tty and stderr cannot both be true")
)

// UnimplementedExec is the exec of a runtime that cannot run processes: the
// stream opens and reports ErrExecUnimplemented, which kubectl prints as
// "error: Internal error occurred: error executing command in container: ...".
func UnimplementedExec(context.Context, []string, io.Reader, io.Writer, io.Writer, bool, <-chan remotecommand.TerminalSize) (int, error) {
	return 0, ErrExecUnimplemented
}

// UnimplementedAttach is the attach of a runtime that runs no processes:
// the stream opens and reports ErrAttachUnimplemented, which kubectl prints
// as "error: Internal error occurred: error attaching to container: ...".
func UnimplementedAttach(context.Context, io.Reader, io.Writer, io.Writer, bool, <-chan remotecommand.TerminalSize) error {
	return ErrAttachUnimplemented
}

// UnimplementedPortForward is the port forward of a runtime without a pod
// network: each forwarded connection's error stream reports
// ErrPortForwardUnimplemented, which kubectl prints as "an error occurred
// forwarding L -> P: error forwarding port P to pod ...".
func UnimplementedPortForward(context.Context, int32, io.ReadWriteCloser) error {
	return ErrPortForwardUnimplemented
}

// executor adapts an ExecFunc to ServeExec's Executor.
type executor ExecFunc

// ExecInContainer runs the command; a non-zero exit code becomes the
// utilexec.ExitError ServeExec reports as NonZeroExitCode (with containerd's
// CRI wording). Absent streams arrive as nil interfaces.
func (f executor) ExecInContainer(ctx context.Context, _, _, _ string, cmd []string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize, _ time.Duration) error {
	code, err := f(ctx, cmd, in, out, errw, tty, resize)
	if err != nil {
		return err
	}
	if code != 0 {
		return utilexec.CodeExitError{Err: fmt.Errorf("error executing command %v, exit code %d", cmd, code), Code: code}
	}
	return nil
}

// attacher adapts an AttachFunc to ServeAttach's Attacher.
type attacher AttachFunc

// AttachContainer attaches the streams; absent ones arrive as nil
// interfaces.
func (f attacher) AttachContainer(ctx context.Context, _, _, _ string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	return f(ctx, in, out, errw, tty, resize)
}

// forwarder adapts a PortForwardFunc to ServePortForward's PortForwarder,
// under the request's context (ServePortForward passes a background one).
type forwarder struct {
	ctx     context.Context
	forward PortForwardFunc
}

// PortForward forwards one connection's stream to port.
func (f forwarder) PortForward(_ context.Context, _, _ string, port int32, stream io.ReadWriteCloser) error {
	return f.forward(f.ctx, port, stream)
}
