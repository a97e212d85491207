package engine

import (
	"context"
	"fmt"
	"maps"
	"net"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	discoveryv1ac "k8s.io/client-go/applyconfigurations/discovery/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/podtrace/podtrace/engine/controlplane"
	"github.com/podtrace/podtrace/engine/identity"
	"github.com/podtrace/podtrace/engine/node"
	"github.com/podtrace/podtrace/engine/pki"
	"github.com/podtrace/podtrace/engine/podnet"
	"github.com/podtrace/podtrace/engine/upstream"
)

// ClusterDNSIP is the kube-dns Service's address, as kubeadm chooses it:
// the tenth of the service range (10.96.0.0/12).
const ClusterDNSIP = "10.96.0.10"

// dnsEndpointIP is the kube-dns Service's endpoint in the pod network
// namespace, where CoreDNS answers too: the control plane's address, as
// for a pod on the host network of the control-plane node (kind's CoreDNS
// pods run there). kube-proxy's rules lead ClusterDNSIP there; without
// them, CoreDNS answers on ClusterDNSIP itself, made local. The endpoint
// cannot be ClusterDNSIP: kube-proxy rejects traffic still bound for a
// ClusterIP after its rules. With real containers, the endpoint is the
// first node's gateway (hostDNS).
var dnsEndpointIP = controlplane.AdvertiseAddress

// dnsAt is where CoreDNS answers: listen and also (IPs, on the DNS port),
// and the kube-dns Service's endpoint, one of them, where its metrics are.
type dnsAt struct {
	listen   string
	also     []string
	endpoint string
}

// Ports of the kube-dns Service, as kubeadm's CoreDNS addon has them.
const (
	dnsPort     = 53
	metricsPort = 9153
)

// kubeDNS names the Service and its EndpointSlice; managedBy is the
// EndpointSlice's manager, so that the EndpointSlice controllers leave it
// alone, as they leave the one kube-apiserver keeps for default/kubernetes.
const (
	kubeDNS   = "kube-dns"
	managedBy = "podtrace"
)

// coreDNSUser is CoreDNS's identity: the kube-system/coredns
// ServiceAccount's, which kubeadm's addon runs it as.
var coreDNSUser = identity.User{Name: serviceaccount.MakeUsername(metav1.NamespaceSystem, "coredns"),
	Groups: serviceaccount.MakeGroupNames(metav1.NamespaceSystem)}

// clusterDNS decides whether the cluster gets its DNS, and returns the
// addresses the kubelets give pods (none without). CoreDNS needs
// ClusterDNSIP to be an address pods reach: in the pod network namespace
// it is made local there; with real containers, kube-proxy's rules on the
// host lead it to CoreDNS (hostDNS). Elsewhere (macOS, a Linux without
// user namespaces, an external etcd, real containers without kube-proxy)
// e.NoClusterDNS says why there is none.
func (e *Engine) clusterDNS(cfg Config) []string {
	switch {
	case cfg.hostBridges() && e.proxyOwner == "":
		e.NoClusterDNS = fmt.Errorf("no cluster DNS: pods reach %s only through kube-proxy's rules, and there is no kube-proxy: pods keep the host's resolvers", ClusterDNSIP)
	case cfg.hostBridges():
	case !podnet.Inside():
		e.NoClusterDNS = fmt.Errorf("no cluster DNS outside a pod network namespace (%s is no address of this machine): pods keep the host's resolvers", ClusterDNSIP)
	default:
		if err := podnet.AddRange(ClusterDNSIP + "/32"); err != nil {
			e.NoClusterDNS = fmt.Errorf("no cluster DNS: %w", err)
		}
	}
	if e.NoClusterDNS != nil {
		klog.InfoS("Running without cluster DNS", "reason", e.NoClusterDNS)
		return nil
	}
	return []string{ClusterDNSIP}
}

// simDNS is where CoreDNS answers in the pod network namespace.
var simDNS = dnsAt{listen: ClusterDNSIP, also: []string{dnsEndpointIP}, endpoint: dnsEndpointIP}

// startCoreDNS registers kube-system/kube-dns as kubeadm's CoreDNS addon
// does (its ServiceAccount and RBAC, the Service) with an EndpointSlice of
// podtrace's naming at.endpoint, since no Pod runs CoreDNS, and runs
// CoreDNS where at says with the ServiceAccount's identity.
func (e *Engine) startCoreDNS(ctx context.Context, at dnsAt) error {
	start := time.Now()
	if err := applyKubeDNS(ctx, e.AdminClient(), at.endpoint); err != nil {
		return fmt.Errorf("cluster DNS: %w", err)
	}
	certPEM, keyPEM, err := e.PKI.IssueClient(coreDNSUser.Name, coreDNSUser.Groups)
	if err != nil {
		return fmt.Errorf("cluster DNS: %w", err)
	}
	kubeconfig := filepath.Join(e.DataDir, "coredns.kubeconfig")
	if err := pki.WriteKubeconfig(kubeconfig, e.API.URL, e.PKI.CAPEM, "coredns", pki.KubeconfigUser{
		Name: coreDNSUser.Name, Context: "coredns", CertPEM: certPEM, KeyPEM: keyPEM}); err != nil {
		return fmt.Errorf("cluster DNS: %w", err)
	}
	e.DNS, err = upstream.StartCoreDNS(ctx, upstream.CoreDNSConfig{Kubeconfig: kubeconfig, Domain: node.ClusterDomain,
		Listen: net.JoinHostPort(at.listen, fmt.Sprint(dnsPort)), Also: at.also,
		Metrics: net.JoinHostPort(at.endpoint, fmt.Sprint(metricsPort))})
	if err != nil {
		return err
	}
	klog.InfoS("CoreDNS serves the cluster's DNS", "address", ClusterDNSIP, "endpoint", at.endpoint, "domain", node.ClusterDomain, "took", time.Since(start))
	return nil
}

// applyKubeDNS applies (server-side, as podtrace) what kubeadm's CoreDNS
// addon creates (cmd/kubeadm/app/phases/addons/dns/manifests.go) but its
// Deployment and ConfigMap: the coredns ServiceAccount, the system:coredns
// ClusterRole and its binding, and the kube-dns Service, without a
// selector since no Pod serves it, with its Endpoints and EndpointSlice
// naming endpoint, where CoreDNS answers, kept as kube-apiserver keeps
// default/kubernetes's (the Endpoints not mirrored, the EndpointSlice
// managed by podtrace).
func applyKubeDNS(ctx context.Context, client kubernetes.Interface, endpoint string) error {
	opts := metav1.ApplyOptions{FieldManager: managedBy, Force: true}
	ns := metav1.NamespaceSystem
	if _, err := client.CoreV1().ServiceAccounts(ns).Apply(ctx, corev1ac.ServiceAccount("coredns", ns), opts); err != nil {
		return err
	}
	role := rbacv1ac.ClusterRole("system:coredns").WithRules(
		rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("endpoints", "services", "pods", "namespaces").WithVerbs("list", "watch"),
		rbacv1ac.PolicyRule().WithAPIGroups(discoveryv1.GroupName).WithResources("endpointslices").WithVerbs("list", "watch"))
	if _, err := client.RbacV1().ClusterRoles().Apply(ctx, role, opts); err != nil {
		return err
	}
	binding := rbacv1ac.ClusterRoleBinding("system:coredns").
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName("system:coredns")).
		WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithName("coredns").WithNamespace(ns))
	if _, err := client.RbacV1().ClusterRoleBindings().Apply(ctx, binding, opts); err != nil {
		return err
	}
	labels := map[string]string{"k8s-app": kubeDNS, "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "CoreDNS"}
	svc := corev1ac.Service(kubeDNS, ns).WithLabels(labels).
		WithAnnotations(map[string]string{"prometheus.io/port": fmt.Sprint(metricsPort), "prometheus.io/scrape": "true"}).
		WithSpec(corev1ac.ServiceSpec().WithClusterIP(ClusterDNSIP).WithPorts(
			servicePort("dns", dnsPort, corev1.ProtocolUDP), servicePort("dns-tcp", dnsPort, corev1.ProtocolTCP),
			servicePort("metrics", metricsPort, corev1.ProtocolTCP)))
	applied, err := client.CoreV1().Services(ns).Apply(ctx, svc, opts)
	if err != nil {
		return err
	}
	owner := metav1ac.OwnerReference().WithAPIVersion("v1").WithKind("Service").WithName(kubeDNS).
		WithUID(applied.UID).WithController(true).WithBlockOwnerDeletion(true)
	endpoints := corev1ac.Endpoints(kubeDNS, ns).WithLabels(with(labels, discoveryv1.LabelSkipMirror, "true")).
		WithSubsets(corev1ac.EndpointSubset().WithAddresses(corev1ac.EndpointAddress().WithIP(endpoint)).WithPorts(
			corev1ac.EndpointPort().WithName("dns").WithPort(dnsPort).WithProtocol(corev1.ProtocolUDP),
			corev1ac.EndpointPort().WithName("dns-tcp").WithPort(dnsPort).WithProtocol(corev1.ProtocolTCP),
			corev1ac.EndpointPort().WithName("metrics").WithPort(metricsPort).WithProtocol(corev1.ProtocolTCP)))
	if _, err := client.CoreV1().Endpoints(ns).Apply(ctx, endpoints, opts); err != nil {
		return err
	}
	slice := discoveryv1ac.EndpointSlice(kubeDNS, ns).
		WithLabels(with(with(labels, discoveryv1.LabelServiceName, kubeDNS), discoveryv1.LabelManagedBy, managedBy)).
		WithOwnerReferences(owner).WithAddressType(discoveryv1.AddressTypeIPv4).
		WithEndpoints(discoveryv1ac.Endpoint().WithAddresses(endpoint).
			WithConditions(discoveryv1ac.EndpointConditions().WithReady(true).WithServing(true).WithTerminating(false))).
		WithPorts(slicePort("dns", dnsPort, corev1.ProtocolUDP), slicePort("dns-tcp", dnsPort, corev1.ProtocolTCP),
			slicePort("metrics", metricsPort, corev1.ProtocolTCP))
	_, err = client.DiscoveryV1().EndpointSlices(ns).Apply(ctx, slice, opts)
	return err
}

func servicePort(name string, port int32, protocol corev1.Protocol) *corev1ac.ServicePortApplyConfiguration {
	return corev1ac.ServicePort().WithName(name).WithPort(port).WithProtocol(protocol).WithTargetPort(intstr.FromInt32(port))
}

func slicePort(name string, port int32, protocol corev1.Protocol) *discoveryv1ac.EndpointPortApplyConfiguration {
	return discoveryv1ac.EndpointPort().WithName(name).WithPort(port).WithProtocol(protocol)
}

// with returns a copy of labels with key set to value.
func with(labels map[string]string, key, value string) map[string]string {
	out := maps.Clone(labels)
	out[key] = value
	return out
}
