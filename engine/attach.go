package engine

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"

	"github.com/podtrace/podtrace/engine/apiserver"
	"github.com/podtrace/podtrace/engine/kubelet/runtime"
)

// podAttach serves pods/attach from the runtime of the pod's node, as the
// kubelet's GetAttach does: the container must be running ("container C
// not found in pod NAME_NAMESPACE"); a runtime without Attach (the simulated
// one) answers in the stream with gRPC's Unimplemented, as a CRI runtime
// without Attach would.
func (e *Engine) podAttach(ctx context.Context, pod *corev1.Pod, container string) (apiserver.ContainerAttachFunc, error) {
	rt, id, err := e.runningContainer(ctx, pod, container,
		fmt.Errorf("container %s not found in pod %s_%s", container, pod.Name, pod.Namespace))
	if err != nil {
		return nil, err
	}
	at, ok := rt.(runtime.Attacher)
	if !ok {
		return apiserver.UnimplementedAttach, nil
	}
	return func(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, tty bool, resize <-chan remotecommand.TerminalSize) error {
		return at.Attach(ctx, id, runtime.ExecStreams{Stdin: stdin, Stdout: stdout, Stderr: stderr, TTY: tty, Resize: runtimeResize(ctx, resize)})
	}, nil
}
