package engine

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"

	"k8s.io/klog/v2"

	"github.com/podtrace/podtrace/engine/controlplane"
	"github.com/podtrace/podtrace/engine/podnet"
	"github.com/podtrace/podtrace/engine/upstream"
)

// With real containers (--runtime containerd) every node's pods hang off
// a bridge of the node's own in the host's network namespace, as on a
// kind or kubeadm node, and the cluster's Services and DNS are served
// there, once for the host: kube-proxy's rules in the host's nftables see
// every bridge's traffic, and CoreDNS answers on the first node's gateway
// address, the kube-dns Service's endpoint.

// proxyOwnerFile is where a podtrace running kube-proxy in the host's
// network namespace claims its nftables tables (upstream.ClaimKubeProxyTables).
const proxyOwnerFile = "/run/podtrace/kube-proxy.owner"

// claimHostProxy claims kube-proxy's nftables tables on the host before
// the nodes start, so that their pods route the Service range to the host
// only where kube-proxy's rules will take it (rewrite it to an endpoint,
// refuse it, or drop it): never off the machine. Where the tables cannot
// be claimed (no nft, no rights, another kube-proxy's tables), there is
// no kube-proxy and e.NoServiceProxy says why.
func (e *Engine) claimHostProxy(ctx context.Context, cfg Config) {
	if !cfg.hostBridges() || len(cfg.Nodes) == 0 {
		return
	}
	if err := upstream.ClaimKubeProxyTables(ctx, proxyOwnerFile); err != nil {
		e.NoServiceProxy = fmt.Errorf("no kube-proxy, so ClusterIPs and NodePorts lead nowhere: %w", err)
		return
	}
	e.proxyOwner = proxyOwnerFile
}

// podRoutes are the ranges node i's pods route through their gateway:
// the Service range where kube-proxy's rules take it, and the other
// nodes' pod ranges (their bridges are on the same host).
func (e *Engine) podRoutes(cfg Config, i int) []string {
	var routes []string
	if e.proxyOwner != "" {
		routes = append(routes, ServiceCIDR)
	}
	for j, n := range cfg.Nodes {
		if j != i && n.PodCIDR != "" {
			routes = append(routes, n.PodCIDR)
		}
	}
	return routes
}

// hostProxy runs kube-proxy in the host's network namespace, which every
// real-container node shares, as the first node's. NodePorts answer on
// each node's gateway address, not on the machine's own addresses:
// nothing of the cluster is served off the machine. A pod that reaches a
// pod on its own bridge through a ClusterIP gets the reply through the
// host's rules because the bridges pass their traffic to netfilter
// (engine/cri/containerd), as br_netfilter's bridge-nf-call-iptables does
// on a kubeadm node with a bridge CNI; without br_netfilter, kube-proxy
// masquerades every ClusterIP connection instead (--masquerade-all).
func (e *Engine) hostProxy(ctx context.Context, cfg Config, pc upstream.KubeProxyConfig) error {
	for i, n := range cfg.Nodes {
		gw := cfg.gateway(n)
		if i == 0 {
			pc.NodeIP = gw
		}
		pc.NodePortAddresses = append(pc.NodePortAddresses, gw.String()+"/32")
	}
	pc.OwnerFile = e.proxyOwner
	if _, err := os.Stat("/proc/sys/net/bridge"); err != nil {
		pc.MasqueradeAll = true
		klog.InfoS("No br_netfilter: kube-proxy masquerades every connection to a ClusterIP")
	}
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward"); err == nil && strings.TrimSpace(string(b)) != "1" {
		// kubeadm's preflight refuses such a node; podtrace leaves the
		// machine's setting alone.
		klog.InfoS("net.ipv4.ip_forward is off: the host forwards no pod's connection to a Service's pod endpoints (cluster DNS, on the host, still answers)")
	}
	var err error
	if e.Proxy, err = upstream.StartKubeProxy(ctx, pc); err != nil {
		e.proxyOwner = "" // StartKubeProxy gave its claim up
	}
	return err
}

// hostDNS runs CoreDNS on the first node's gateway address, where every
// node's pods reach it through kube-proxy's rules for the kube-dns
// Service (ClusterDNSIP), its endpoint. Without kube-proxy, pods cannot
// reach it, and e.NoClusterDNS says so.
func (e *Engine) hostDNS(ctx context.Context, cfg Config) error {
	if e.Proxy == nil {
		e.NoClusterDNS = fmt.Errorf("no cluster DNS: pods reach %s only through kube-proxy's rules", ClusterDNSIP)
		klog.InfoS("Running without cluster DNS", "reason", e.NoClusterDNS)
		return nil
	}
	gw := cfg.gateway(cfg.Nodes[0]).String()
	return e.startCoreDNS(ctx, dnsAt{listen: gw, endpoint: gw})
}

// hostAPIAddress is where pods on real containers reach kube-apiserver,
// which listens on loopback: the first node's gateway, which kube-apiserver
// advertises as default/kubernetes's endpoint (so the kubernetes Service,
// 10.96.0.1, leads there through kube-proxy's rules) and hostAPI forwards.
// Empty without real containers or a first node's pod range.
func hostAPIAddress(cfg Config) string {
	if !cfg.hostBridges() || len(cfg.Nodes) == 0 {
		return ""
	}
	if gw := cfg.gateway(cfg.Nodes[0]); gw != nil {
		return gw.String()
	}
	return ""
}

// hostAPI forwards the API server's port on the address it advertises
// (the first node's gateway, hostAPIAddress, on its bridge once the nodes
// run; in a pod network namespace controlplane.AdvertiseAddress, local
// there) to kube-apiserver on loopback, so that the kubernetes Service's
// endpoint answers, as a control plane node's address does; a kubeadm
// node's kube-apiserver listens on every address instead.
func (e *Engine) hostAPI(ctx context.Context, cfg Config) error {
	gw := hostAPIAddress(cfg)
	inside := gw == "" && podnet.Inside()
	if inside {
		gw = controlplane.AdvertiseAddress
	}
	if gw == "" {
		return nil
	}
	u, err := url.Parse(e.ControlPlane.API.URL)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(gw, u.Port()))
	if err != nil && inside { // kube-apiserver advertises no endpoint there (see controlplane's advertise)
		klog.InfoS("Pods do not reach the API server at the kubernetes Service", "err", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("the kubernetes Service's endpoint: %w", err)
	}
	go podnet.Forward(ctx, ln, u.Host)
	return nil
}
