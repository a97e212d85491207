package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/podtrace/podtrace/engine/identity"
	"github.com/podtrace/podtrace/engine/podnet"
	"github.com/podtrace/podtrace/engine/upstream"
)

// ServiceCIDR is the Services' range, kubeadm's and kind's default
// (kube-apiserver's --service-cluster-ip-range).
const ServiceCIDR = "10.96.0.0/12"

// clusterCIDR is the pods' range as kind gives it to kube-proxy
// (--cluster-cidr, kubeadm's podSubnet): every node's range is in it.
const clusterCIDR = "10.244.0.0/16"

// kubeProxyUser is kube-proxy's identity: the kube-system/kube-proxy
// ServiceAccount's, which kubeadm's addon runs it as.
var kubeProxyUser = identity.User{Name: serviceaccount.MakeUsername(metav1.NamespaceSystem, "kube-proxy"),
	Groups: serviceaccount.MakeGroupNames(metav1.NamespaceSystem)}

// serviceProxy decides whether Services can route: in the pod network
// namespace, where kube-proxy's rules see every simulated pod's traffic,
// and on the host with real containers, where they see every bridge's.
// Elsewhere (macOS, a Linux without user namespaces, an external etcd)
// e.NoServiceProxy says why not.
func (e *Engine) serviceProxy(cfg Config) bool {
	switch {
	case e.NoServiceProxy != nil: // on the host, its tables could not be claimed
	case len(cfg.Nodes) == 0:
		e.NoServiceProxy = errors.New("no kube-proxy without a node")
	case !cfg.hostBridges() && !podnet.Inside():
		e.NoServiceProxy = errors.New("no kube-proxy outside a pod network namespace: ClusterIPs and NodePorts lead nowhere")
	}
	return e.NoServiceProxy == nil
}

// startKubeProxy runs kube-proxy, in nftables mode, once for every node's
// network (hostProxy, simProxy) as the first node's (kind runs one per
// node, each in the node's own namespace). Where nftables cannot be used
// (no nft, too old, no rights, tables that are not podtrace's),
// e.NoServiceProxy says why and the cluster runs without.
func (e *Engine) startKubeProxy(ctx context.Context, cfg Config) error {
	start := time.Now()
	if err := applyKubeProxyRBAC(ctx, e.AdminClient()); err != nil {
		return fmt.Errorf("kube-proxy: %w", err)
	}
	client, err := e.client(kubeProxyUser, "kube-proxy")
	if err != nil {
		return fmt.Errorf("kube-proxy: %w", err)
	}
	pc := upstream.KubeProxyConfig{Client: client, NodeName: cfg.Nodes[0].Name, ClusterCIDR: clusterCIDR}
	if cfg.hostBridges() {
		err = e.hostProxy(ctx, cfg, pc)
	} else {
		err = e.simProxy(ctx, cfg, pc)
	}
	if err != nil {
		e.NoServiceProxy = fmt.Errorf("no kube-proxy, so ClusterIPs and NodePorts lead nowhere: %w", err)
		klog.InfoS("Running without kube-proxy", "reason", e.NoServiceProxy)
		return nil
	}
	klog.InfoS("kube-proxy routes Services", "mode", "nftables", "node", cfg.Nodes[0].Name, "took", time.Since(start))
	return nil
}

// simProxy runs kube-proxy in the pod network namespace that every
// simulated node shares: NodePorts answer on every node's address, and
// the Service range is made local there.
func (e *Engine) simProxy(ctx context.Context, cfg Config, pc upstream.KubeProxyConfig) error {
	for i := range cfg.Nodes {
		pc.NodePortAddresses = append(pc.NodePortAddresses, podnet.HostIP(i+2).String()+"/32")
	}
	pc.NodeIP = podnet.HostIP(2) // the first node's (nodeIP)
	var err error
	if e.Proxy, err = upstream.StartKubeProxy(ctx, pc); err != nil {
		return err
	}
	// The Service range is local, as the pod range is: a connection to a
	// ClusterIP is then rewritten by kube-proxy's rules, or refused by
	// them (no ready endpoint: "Connection refused", as on a node), never
	// routed off.
	if err := podnet.AddRange(ServiceCIDR); err != nil {
		e.Proxy.Stop()
		e.Proxy = nil
		return err
	}
	return nil
}

// applyKubeProxyRBAC applies what kubeadm's kube-proxy addon creates for
// its identity (cmd/kubeadm/app/phases/addons/proxy): the kube-proxy
// ServiceAccount and the kubeadm:node-proxier binding to the
// system:node-proxier ClusterRole.
func applyKubeProxyRBAC(ctx context.Context, client kubernetes.Interface) error {
	opts := metav1.ApplyOptions{FieldManager: managedBy, Force: true}
	ns := metav1.NamespaceSystem
	if _, err := client.CoreV1().ServiceAccounts(ns).Apply(ctx, corev1ac.ServiceAccount("kube-proxy", ns), opts); err != nil {
		return err
	}
	binding := rbacv1ac.ClusterRoleBinding("kubeadm:node-proxier").
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName("system:node-proxier")).
		WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithName("kube-proxy").WithNamespace(ns))
	_, err := client.RbacV1().ClusterRoleBindings().Apply(ctx, binding, opts)
	return err
}
