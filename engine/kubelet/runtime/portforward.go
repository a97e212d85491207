package runtime

import (
	"context"
	"io"
)

// PortForwarder is the optional part of a Runtime that reaches a pod's
// network (CRI PortForward and its streaming server), for `kubectl
// port-forward`. A runtime without pod networks does not implement it.
type PortForwarder interface {
	// PortForward connects to port on the loopback of the network namespace
	// of the ready sandbox of the pod with podUID and copies bytes both ways
	// between that connection and stream until either side ends.
	PortForward(ctx context.Context, podUID string, port int32, stream io.ReadWriteCloser) error
}
