package engine

import (
	"context"
	"io"

	corev1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/engine/apiserver"
	"github.com/podtrace/podtrace/engine/kubelet/runtime"
)

// podPortForward serves pods/portforward from the runtime of the pod's
// node, as the kubelet's GetPortForward does; a runtime without pod networks
// (the simulated one) answers each forwarded connection with gRPC's
// Unimplemented, as a CRI runtime without PortForward would.
func (e *Engine) podPortForward(_ context.Context, pod *corev1.Pod) (apiserver.PortForwardFunc, error) {
	rt, err := e.podRuntime(pod)
	if err != nil {
		return nil, err
	}
	pf, ok := rt.(runtime.PortForwarder)
	if !ok {
		return apiserver.UnimplementedPortForward, nil
	}
	uid := string(pod.UID)
	return func(ctx context.Context, port int32, stream io.ReadWriteCloser) error {
		return pf.PortForward(ctx, uid, port, stream)
	}, nil
}
