package apiserver

import (
	"context"
	"errors"
	"io"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
)

// PodAttachFunc finds the running container a pods/attach request names,
// before the connection is upgraded, as the kubelet's attach handler asks
// the runtime for the attach before it upgrades. A non-nil error is
// answered as the kubelet answers it: status 500 with the error's text.
type PodAttachFunc func(ctx context.Context, pod *corev1.Pod, container string) (ContainerAttachFunc, error)

// ContainerAttachFunc attaches the given streams (nil: not requested) to
// the main process of the container found by a PodAttachFunc until either
// side ends; tty is the container's own setting.
type ContainerAttachFunc func(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, tty bool, resize <-chan remotecommand.TerminalSize) error

// podAttach serves GET and POST pods/NAME/attach: kube-apiserver's
// AttachREST checks (create permission, the pod, its container and node,
// as for exec), then the kubelet's side, served in process by
// cri-streaming's ServeAttach (SPDY and websocket up to v4; kubectl 1.30+
// falls back from v5 to SPDY). As the kubelet's GetAttach, the terminal
// setting is the container spec's, not the request's.
func (s *Server) podAttach(w http.ResponseWriter, r *http.Request, res *Resource, rt *requestTrace) {
	pod, container, r, opts, ok := s.streamTarget(w, r, res, rt, "attach")
	if !ok {
		return
	}
	attach := UnimplementedAttach
	if s.cfg.PodAttach != nil { // the kubelet first finds the running container
		var err error
		if attach, err = s.cfg.PodAttach(r.Context(), pod, container); err != nil {
			writeKubeletError(w, err)
			return
		}
	}
	if opts.TTY = containerTTY(pod, container); opts.TTY && opts.Stderr {
		writeKubeletError(w, errAttachTTYStderr) // the CRI streaming server's validateAttachRequest
		return
	}
	remotecommand.ServeAttach(w, r, containerAttacher(attach), pod.Name, string(pod.UID), container, opts,
		execStreamIdleTimeout, execStreamCreationTimeout, remotecommand.SupportedStreamingProtocols)
}

// containerTTY is the tty setting of the pod's container name (init,
// regular or ephemeral), as kubecontainer.GetContainerSpec finds it.
func containerTTY(pod *corev1.Pod, name string) bool {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			if c.Name == name {
				return c.TTY
			}
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return c.TTY
		}
	}
	return false
}

var (
	// errAttachTTYStderr is the CRI streaming server's answer to an attach
	// asking for stderr from a container with a terminal.
	errAttachTTYStderr = errors.New("rpc error: code = InvalidArgument desc = tty and stderr cannot both be true")

	// ErrAttachUnimplemented is what a CRI runtime without Attach answers
	// (gRPC's Unimplemented status from the generated server stub).
	ErrAttachUnimplemented = errors.New("rpc error: code = Unimplemented desc = method Attach not implemented")
)

// UnimplementedAttach is the attach of a runtime that runs no processes:
// the stream opens and reports ErrAttachUnimplemented, which kubectl prints
// as "error: Internal error occurred: error attaching to container: ...".
func UnimplementedAttach(context.Context, io.Reader, io.Writer, io.Writer, bool, <-chan remotecommand.TerminalSize) error {
	return ErrAttachUnimplemented
}

// containerAttacher adapts a ContainerAttachFunc to ServeAttach's Attacher.
type containerAttacher ContainerAttachFunc

// AttachContainer attaches the streams; absent ones arrive as nil
// interfaces.
func (f containerAttacher) AttachContainer(ctx context.Context, _, _, _ string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	return f(ctx, in, out, errw, tty, resize)
}
