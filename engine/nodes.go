package engine

import (
	"context"
	"net"
	"time"

	v1 "k8s.io/api/core/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"

	"github.com/podtrace/podtrace/engine/identity"
	"github.com/podtrace/podtrace/engine/nodes"
	"github.com/podtrace/podtrace/engine/nodeset"
	"github.com/podtrace/podtrace/engine/pki"
	"github.com/podtrace/podtrace/engine/podnet"
	"github.com/podtrace/podtrace/engine/upstream"
	"github.com/podtrace/podtrace/version"
)

// nodeIP gives node i (from 0) its InternalIP in the pod network namespace
// (engine/podnet), made local there.
func nodeIP(i int) (net.IP, error) {
	ip := podnet.HostIP(i + 2)
	return ip, podnet.AddRange(ip.String() + "/32")
}

// startNodes starts one real kubelet per node (engine/nodeset), each on its
// runtime behind podtrace's CRI interposer, and waits until they are Ready.
func (e *Engine) startNodes(ctx context.Context, cfg Config) error {
	if cfg.hostBridges() || podnet.Inside() {
		// Pods get addresses from their node's range; on loopback twins
		// (engine/cri/sim) they do not, and the Nodes keep none.
		e.podCIDRs = podCIDRs(cfg.Nodes)
	}
	ipam := e.AdminConfig()
	ipam.UserAgent = "podtrace-node-ipam/" + version.Kubernetes
	assignPodCIDRs(ctx, kubernetes.NewForConfigOrDie(ipam), e.podCIDRs)
	tracing, err := upstream.TracingFromEnv() // the kubelets' own spans, when the environment asks
	if err != nil {
		return err
	}
	set := nodeset.Config{Nodes: cfg.Nodes, DataDir: e.DataDir, Tracer: e.Tracer, Seed: cfg.Seed, Speed: e.Speed,
		KeepState: true, Routes: func(i int) []string { return e.podRoutes(cfg, i) },
		Credentials: e.nodeCredentials(cfg), ClusterDNS: e.dnsServers, MaxContainerRestartPeriod: cfg.MaxContainerRestartPeriod,
		Tracing: tracing}
	if cfg.Runtime != nil {
		set.Runtime = cfg.Runtime.NewNode
	}
	if cfg.Untraced {
		set.Tracer = nil
	}
	if e.NodeSet, err = nodeset.Start(ctx, set); err != nil {
		return err
	}
	return e.WaitNodesReady(ctx)
}

// nodeCredentials gives each kubelet its identity in the cluster
// (system:node:NAME) and a serving certificate from the cluster's CA for
// its addresses: loopback, and its own address: in the pod network
// namespace, or with real containers its pods' gateway (the node's
// address on its bridge, as a kind node's is on the kind network, so that
// NodePorts, hostPorts and host-network pods answer on the node's
// InternalIP and never on the machine's own addresses), else the host's.
func (e *Engine) nodeCredentials(cfg Config) func(i int, n nodes.Spec) (nodeset.Credentials, error) {
	hostIP, err := utilnet.ResolveBindAddress(nil)
	if err != nil {
		hostIP = nil // the kubelet reports no InternalIP; its API is then unreachable
	}
	return func(i int, n nodes.Spec) (nodeset.Credentials, error) {
		c := nodeset.Credentials{ClientCAFile: e.PKI.Path(pki.CACertFile)}
		var err error
		if c.KubeConfig, err = e.RestConfig(identity.NodeUser(n.Name), "kubelet/"+version.Kubernetes+" (podtrace)"); err != nil {
			return c, err
		}
		ips := []net.IP{net.IPv4(127, 0, 0, 1)}
		switch {
		case podnet.Inside():
			if c.NodeIP, err = nodeIP(i); err != nil {
				return c, err
			}
			ips = append(ips, c.NodeIP)
		case cfg.hostBridges(): // the runtimes, and their bridges, start before the kubelets
			c.NodeIP = cfg.gateway(n)
			ips = append(ips, c.NodeIP)
		case hostIP != nil:
			ips = append(ips, hostIP)
		}
		c.ServingCert, err = e.PKI.IssueKubeletServing(n.Name, ips...)
		return c, err
	}
}

// nodeReadyTimeout bounds how long Start waits for the kubelets to
// register their Nodes and report Ready.
const nodeReadyTimeout = 2 * time.Minute

// untainted reports whether the node lifecycle controller has taken node's
// node.kubernetes.io/not-ready taint away (the kubelet registers with it).
func untainted(node *v1.Node) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == v1.TaintNodeNotReady {
			return false
		}
	}
	return true
}

// WaitNodesReady waits until every node of the engine is Ready and
// schedulable, with its pod range, as Start promises a running cluster
// and again after a fault on their readiness or a restart, for up to two
// minutes or until ctx ends.
func (e *Engine) WaitNodesReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, nodeReadyTimeout)
	defer cancel()
	return e.NodeSet.WaitReady(ctx, e.AdminClient(), func(n *v1.Node) bool { return untainted(n) && hasPodCIDR(n, e.podCIDRs) })
}
