package upstream

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/proxy"
	"k8s.io/kubernetes/pkg/proxy/apis"
	proxyconfig "k8s.io/kubernetes/pkg/proxy/config"
	"k8s.io/kubernetes/pkg/proxy/nftables"
	proxyutil "k8s.io/kubernetes/pkg/proxy/util"
)

// kube-proxy's defaults (KubeProxyConfiguration v1alpha1): the sync
// periods, the informers' resync and the masquerade mark's bit.
const (
	proxySyncPeriod    = 30 * time.Second
	proxyMinSyncPeriod = time.Second
	proxyResync        = 15 * time.Minute
	masqueradeBit      = 14
)

// KubeProxy is a running kube-proxy: upstream's nftables proxier, fed by
// upstream's Service, EndpointSlice, ServiceCIDR and Node configs.
type KubeProxy struct {
	cancel      context.CancelFunc
	broadcaster events.EventBroadcaster
	ownerFile   string
	stop        sync.Once
}

// StartKubeProxy runs kube-proxy in nftables mode in this process's
// network namespace, as cmd/kube-proxy's ProxyServer.Run does (the same
// informers, selectors and handlers, the "Starting" Event on its Node),
// without its health and metrics servers and without touching conntrack
// sysctls (kind's settings for a node in a container). Upstream's Run
// cannot be stopped, so its informers run here on ctx. It returns once
// the proxier exists; it fails where nft is missing or too old, or the
// namespace's nftables cannot be written, and with cfg.OwnerFile where
// its tables are not this process's to write (ClaimKubeProxyTables). Its logs go
// through klog.
func StartKubeProxy(ctx context.Context, cfg KubeProxyConfig) (*KubeProxy, error) {
	if cfg.OwnerFile != "" {
		if err := ClaimKubeProxyTables(ctx, cfg.OwnerFile); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: cfg.Client.EventsV1()})
	recorder := broadcaster.NewRecorder(scheme.Scheme, "kube-proxy")
	localDetector := proxyutil.NewNoOpLocalDetector()
	if cfg.ClusterCIDR != "" {
		localDetector = proxyutil.NewDetectLocalByCIDR(cfg.ClusterCIDR)
	}
	proxier, err := nftables.NewProxier(ctx, v1.IPv4Protocol, proxySyncPeriod, proxyMinSyncPeriod, cfg.MasqueradeAll, masqueradeBit,
		localDetector, cfg.NodeName, cfg.NodeIP, recorder, nil, cfg.NodePortAddresses, false)
	if err != nil {
		cancel()
		if cfg.OwnerFile != "" {
			ReleaseKubeProxyTables(cfg.OwnerFile)
		}
		return nil, err
	}
	k := &KubeProxy{cancel: cancel, broadcaster: broadcaster, ownerFile: cfg.OwnerFile}
	broadcaster.StartRecordingToSink(ctx.Done())
	if err := watch(ctx, cfg, proxier); err != nil {
		k.Stop()
		return nil, err
	}
	recorder.Eventf(&v1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: cfg.NodeName}, nil,
		v1.EventTypeNormal, "Starting", "StartKubeProxy", "")
	go proxier.SyncLoop()
	context.AfterFunc(ctx, k.Stop)
	return k, nil
}

// watch feeds proxier what ProxyServer.Run feeds it: Services but
// headless ones and those another proxy serves, EndpointSlices but
// headless Services', ServiceCIDRs, and its Node's topology labels.
func watch(ctx context.Context, cfg KubeProxyConfig, proxier proxy.Provider) error {
	noProxyName, err := labels.NewRequirement(apis.LabelServiceProxyName, selection.DoesNotExist, nil)
	if err != nil {
		return err
	}
	noHeadless, err := labels.NewRequirement(v1.IsHeadlessService, selection.DoesNotExist, nil)
	if err != nil {
		return err
	}
	services := informers.NewSharedInformerFactoryWithOptions(cfg.Client, proxyResync,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = labels.NewSelector().Add(*noProxyName).String()
			o.FieldSelector = fields.OneTermNotEqualSelector("spec.clusterIP", v1.ClusterIPNone).String()
		}))
	slices := informers.NewSharedInformerFactoryWithOptions(cfg.Client, proxyResync,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = labels.NewSelector().Add(*noHeadless).String()
		}))
	all := informers.NewSharedInformerFactoryWithOptions(cfg.Client, proxyResync)
	thisNode := informers.NewSharedInformerFactoryWithOptions(cfg.Client, proxyResync,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", cfg.NodeName).String()
		}))

	serviceConfig := proxyconfig.NewServiceConfig(ctx, services.Core().V1().Services(), proxyResync)
	serviceConfig.RegisterEventHandler(proxier)
	go serviceConfig.Run(ctx.Done())
	sliceConfig := proxyconfig.NewEndpointSliceConfig(ctx, slices.Discovery().V1().EndpointSlices(), proxyResync)
	sliceConfig.RegisterEventHandler(proxier)
	go sliceConfig.Run(ctx.Done())
	if utilfeature.DefaultFeatureGate.Enabled(features.MultiCIDRServiceAllocator) {
		cidrConfig := proxyconfig.NewServiceCIDRConfig(ctx, all.Networking().V1().ServiceCIDRs(), proxyResync)
		cidrConfig.RegisterEventHandler(proxier)
		go cidrConfig.Run(ctx.Done())
	}
	proxyconfig.NewNodeTopologyConfig(ctx, thisNode.Core().V1().Nodes(), proxyResync).RegisterEventHandler(proxier)
	for _, f := range []informers.SharedInformerFactory{services, slices, all, thisNode} {
		f.Start(ctx.Done())
	}
	klog.InfoS("kube-proxy watches Services and EndpointSlices", "mode", "nftables", "node", cfg.NodeName)
	return nil
}

// Stop stops kube-proxy's informers and Events and removes its nftables
// tables (upstream's CleanupLeftovers), so that Services stop routing, and
// gives up the claim on them (OwnerFile). Upstream's sync loop has no stop:
// with nothing to tell it of changes, it rests (its next periodic sync is
// an hour away).
func (k *KubeProxy) Stop() {
	k.stop.Do(func() {
		k.cancel()
		k.broadcaster.Shutdown()
		if k.ownerFile != "" {
			ReleaseKubeProxyTables(k.ownerFile)
			return
		}
		nftables.CleanupLeftovers(context.Background())
	})
}
