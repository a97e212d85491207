package engine

import (
	"context"
	"fmt"
	"io"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"

	"github.com/podtrace/podtrace/engine/apiserver"
	"github.com/podtrace/podtrace/engine/kubelet/runtime"
)

// podExec serves pods/exec from the runtime of the pod's node, as the
// kubelet's GetExec does: the container must be running ("container not
// found"); a runtime without Exec (the simulated one) answers in the stream
// with gRPC's Unimplemented, as a CRI runtime without Exec would.
func (e *Engine) podExec(ctx context.Context, pod *corev1.Pod, container string) (apiserver.ContainerExecFunc, error) {
	rt, id, err := e.runningContainer(ctx, pod, container, fmt.Errorf("container not found (%q)", container))
	if err != nil {
		return nil, err
	}
	ex, ok := rt.(runtime.Execer)
	if !ok {
		return apiserver.UnimplementedExec, nil
	}
	return func(ctx context.Context, cmd []string, stdin io.Reader, stdout, stderr io.Writer, tty bool, resize <-chan remotecommand.TerminalSize) (int, error) {
		return ex.Exec(ctx, id, cmd, runtime.ExecStreams{Stdin: stdin, Stdout: stdout, Stderr: stderr, TTY: tty, Resize: runtimeResize(ctx, resize)})
	}, nil
}

// runningContainer finds the runtime of the pod's node and the ID of its
// running container, or answers notFound as the kubelet does.
func (e *Engine) runningContainer(ctx context.Context, pod *corev1.Pod, container string, notFound error) (runtime.Runtime, string, error) {
	rt, err := e.podRuntime(pod)
	if err != nil {
		return nil, "", err
	}
	id := containerID(pod, container)
	if id == "" {
		return nil, "", notFound
	}
	if st, err := rt.ContainerStatus(ctx, id); err != nil || st.State != runtime.StateRunning {
		return nil, "", notFound
	}
	return rt, id, nil
}

// podRuntime is the runtime of the kubelet of the pod's node, for the
// kubelet's streaming handlers (exec, attach, port-forward); no kubelet answers as
// the kubelet does for a pod it does not have.
func (e *Engine) podRuntime(pod *corev1.Pod) (runtime.Runtime, error) {
	k := e.Kubelet(pod.Spec.NodeName)
	if k == nil {
		return nil, &apiserver.KubeletStatusError{Code: http.StatusNotFound, Message: "pod does not exist"}
	}
	return k.Runtime(), nil
}

// runtimeResize relays resize events to the runtime's type until in closes.
func runtimeResize(ctx context.Context, in <-chan remotecommand.TerminalSize) <-chan runtime.TerminalSize {
	if in == nil {
		return nil
	}
	out := make(chan runtime.TerminalSize)
	go func() {
		defer close(out)
		for size := range in {
			select {
			case out <- runtime.TerminalSize{Width: size.Width, Height: size.Height}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}
