package node

import (
	"context"
	"net"
	"sync"
)

// listening holds the ports of this process's kubelet servers.
var listening sync.Map // port string → struct{}

// Dial is how kube-apiserver reaches this process's kubelets (its egress
// to the cluster network, as a konnectivity dialer would be). A kubelet
// reports the host's address as its Node's InternalIP, as any kubelet does
// (it refuses a loopback node IP), but listens only on 127.0.0.1, on a port
// of its own that the Node advertises: Dial connects to that port on
// loopback. Any other address is dialled as it is.
func Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if _, port, err := net.SplitHostPort(addr); err == nil {
		if _, ok := listening.Load(port); ok {
			addr = net.JoinHostPort("127.0.0.1", port)
		}
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}
