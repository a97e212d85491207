package upstream

import (
	"net"

	"k8s.io/client-go/kubernetes"
)

// KubeProxyConfig is what kube-proxy proxies and where.
type KubeProxyConfig struct {
	// Client is kube-proxy's identity (system:node-proxier's rights).
	Client kubernetes.Interface
	// NodeName is the Node kube-proxy runs for: its Events name it, and
	// Services with a Local traffic policy reach that node's endpoints.
	NodeName string
	// NodeIP is that node's address.
	NodeIP net.IP
	// NodePortAddresses are the CIDRs NodePorts are served on
	// (--nodeport-addresses).
	NodePortAddresses []string
	// ClusterCIDR is the pods' range (--cluster-cidr): traffic from
	// outside it to a ClusterIP is masqueraded.
	ClusterCIDR string
	// MasqueradeAll masquerades every connection to a ClusterIP
	// (--masquerade-all).
	MasqueradeAll bool
	// OwnerFile, when set, is where this process claims kube-proxy's
	// nftables tables ("kube-proxy", ip and ip6) in a network namespace
	// that other programs share (the host's): kube-proxy does not start
	// where those tables exist and no podtrace that has exited left them,
	// and Stop gives the claim up with the tables.
	OwnerFile string
}
