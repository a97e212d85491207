// Package node runs real kubelets (k8s.io/kubernetes/cmd/kubelet/app) in
// podtrace's process, one per node, the way kubemark's hollow node runs
// them (pkg/kubemark): the kubelet's pod workers, status manager, prober,
// volume manager, image manager and event recorder are upstream's; the
// container runtime is whatever CRI RuntimeService and ImageManagerService
// the caller gives (podtrace's simulated runtime or containerd's CRI,
// usually behind podtrace's CRI interposer), and the parts that need root
// on a real host (cgroups, OOM scores) are kubemark's stubs; mounts are
// upstream's real ones for real containers, else a record (Mounts).
package node

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	oteltrace "go.opentelemetry.io/otel/trace"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/connrotation"
	tracingapi "k8s.io/component-base/tracing/api/v1"
	internalapi "k8s.io/cri-api/pkg/apis"

	kubeletapp "k8s.io/kubernetes/cmd/kubelet/app"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/kubelet"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	kubecontainer "k8s.io/kubernetes/pkg/kubelet/container"
	containertest "k8s.io/kubernetes/pkg/kubelet/container/testing"
	kubeletserver "k8s.io/kubernetes/pkg/kubelet/server"
	kubeletutil "k8s.io/kubernetes/pkg/kubelet/util"
	"k8s.io/kubernetes/pkg/util/oom"
	"k8s.io/kubernetes/pkg/volume"
	"k8s.io/kubernetes/pkg/volume/configmap"
	"k8s.io/kubernetes/pkg/volume/downwardapi"
	"k8s.io/kubernetes/pkg/volume/emptydir"
	"k8s.io/kubernetes/pkg/volume/image"
	"k8s.io/kubernetes/pkg/volume/projected"
	"k8s.io/kubernetes/pkg/volume/secret"

	"github.com/podtrace/podtrace/engine/nodes"
)

// Config configures one node's kubelet.
type Config struct {
	// Spec is the node: name, capacity (cpu in whole cores, memory, pods,
	// ephemeral-storage), labels and taints.
	Spec nodes.Spec
	// Dir is the kubelet's root directory (pods, volumes, plugins).
	Dir string
	// HostDir is a simulated node's host file system (RealContainers
	// false): its pods' hostPath volumes are there (HostDir/data for a
	// hostPath /data), made and checked by the kubelet as on a real node,
	// never on the machine's own paths (see hostPathPlugins). Empty: the
	// directory host in Dir.
	HostDir string
	// KubeConfig reaches the API server as system:node:<name>.
	KubeConfig *rest.Config
	// Runtime and Images are the container runtime the kubelet drives.
	Runtime internalapi.RuntimeService
	Images  internalapi.ImageManagerService
	// ServingCert is the certificate of the kubelet's API server (logs,
	// exec, attach, port-forward), for the node's addresses.
	ServingCert tls.Certificate
	// ClientCAFile verifies the client certificates of callers of the
	// kubelet's API (kube-apiserver's); the kubelet authorizes them with a
	// SubjectAccessReview, as a kubelet with webhook authorization does.
	// Empty leaves the API unauthenticated.
	ClientCAFile string
	// Tracker, when set, wraps the kubelet's pod startup latency tracker:
	// it is told when the kubelet first sees each pod.
	Tracker func(kubeletutil.PodStartupLatencyTracker) kubeletutil.PodStartupLatencyTracker
	// OnEvent, when set, sees every Event the kubelet records, before the
	// event correlator aggregates or drops any.
	OnEvent func(*v1.Event)
	// MaxContainerRestartPeriod, when set, caps the kubelet's crash-loop
	// back-off (its crashLoopBackOff.maxContainerRestartPeriod; upstream's
	// default is 5 minutes).
	MaxContainerRestartPeriod time.Duration
	// NodeIP, when set, is the node's InternalIP (a local address); else
	// the kubelet finds the host's own.
	NodeIP net.IP
	// ClusterDNS are the addresses of the cluster's DNS server, which the
	// kubelet writes into the resolv.conf of pods with dnsPolicy
	// ClusterFirst (its clusterDNS); none leaves them the node's resolvers
	// and records MissingClusterDNS on each of them.
	ClusterDNS []string
	// RealContainers says the runtime runs real containers (containerd):
	// the kubelet then makes the pod directories the runtime writes into
	// (logs) on the real file system, and garbage-collects dead containers
	// with upstream's default minimum age (none) instead of kubemark's
	// minute, so a deleted pod leaves no container or snapshot behind for
	// longer than one collection period.
	RealContainers bool
	// Tracing, when set, is the kubelet's tracing block (its
	// KubeletConfiguration's tracing): the kubelet sends its own spans
	// (syncPod, its API requests) to the OTLP endpoint there.
	Tracing *tracingapi.TracingConfiguration
	// TracerProvider, when set, is the kubelet's tracer provider (made by
	// TracerProvider from Tracing), shared with its CRI client so that the
	// client's spans nest in the kubelet's.
	TracerProvider oteltrace.TracerProvider
	// Mounts, when set, is the mounter of a node without RealContainers:
	// it records what the kubelet mounts, for its simulated runtime
	// (cri.Config.Mounts); nil: a record of its own.
	Mounts *Mounts
}

// Node is a running kubelet.
type Node struct {
	// Name is the node's name.
	Name string
	// Address and Port are where the kubelet's API server listens: the
	// node's own IP and the kubelet's 10250 when it has one (NodeIP), else
	// 127.0.0.1 and a port of its own. The Node object advertises the port
	// in status.daemonEndpoints.
	Address string
	Port    int

	dir  string // the kubelet's root directory, as Config.Dir gave it
	real bool   // Config.RealContainers: the kubelet really mounts
}

// Unmount unmounts whatever the node's kubelet left mounted at or under
// its root directory (with real containers: emptyDir tmpfs, subPath bind
// mounts, the root directory's own rshared bind mount), the deepest
// first, so that no mount stays on the host once the node is gone. Call
// it once the kubelet stopped (its context ended) and before the
// directory is removed. A node without real containers mounted nothing.
func (n *Node) Unmount() error {
	if !n.real {
		return nil
	}
	if err := unmountAll(n.dir); err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	return nil
}

// Start starts the node's kubelet and returns once it runs; it registers
// its Node and syncs pods in the background until ctx ends.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	name := cfg.Spec.Name
	var err error
	dir := cfg.Dir
	for _, d := range []string{cfg.Dir, filepath.Join(cfg.Dir, "manifests"), filepath.Join(cfg.Dir, "pod-logs")} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return nil, fmt.Errorf("node %s: %w", name, err)
		}
	}
	if cfg.Dir, err = rootDir(cfg.Dir); err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	addr, port, release, err := listenAddress(cfg.NodeIP)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	started := false
	defer func() {
		if !started {
			release()
			if cfg.RealContainers {
				_ = unmountAll(dir) // the kubelet may have made its root rshared
			}
		}
	}()
	server, err := kubeletServer(cfg, addr, port)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	client, heartbeat, err := clients(ctx, cfg.KubeConfig)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	server.KubeletConfiguration.Tracing = cfg.Tracing
	tp, err := tracerProvider(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	mounter, subpather, hu, err := hostMounts(cfg)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	if err := seedHost(hostDir(cfg, dir)); err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	tracker := kubeletutil.NewPodStartupLatencyTracker()
	if cfg.Tracker != nil {
		tracker = cfg.Tracker(tracker)
	}
	deps := &kubelet.Dependencies{
		KubeClient:                client,
		HeartbeatClient:           heartbeat,
		EventClient:               client.CoreV1(),
		RemoteRuntimeService:      cfg.Runtime,
		RemoteImageService:        cfg.Images,
		CAdvisorInterface:         newMachine(name, cfg.Spec.Capacity),
		ContainerManager:          newContainerManager(cfg.Spec.Capacity),
		OSInterface:               osInterface(cfg.RealContainers),
		VolumePlugins:             volumePlugins(hostDir(cfg, dir)),
		OOMAdjuster:               oom.NewFakeOOMAdjuster(),
		Mounter:                   mounter,
		Subpather:                 subpather,
		HostUtil:                  hu,
		PodStartupLatencyTracker:  tracker,
		NodeStartupLatencyTracker: kubeletutil.NewNodeStartupLatencyTracker(),
		TracerProvider:            tp,
		TLSConfig:                 &tls.Config{Certificates: []tls.Certificate{cfg.ServingCert}, MinVersion: tls.VersionTLS12},
		Recorder:                  recorder(ctx, cfg, client),
	}
	if cfg.ClientCAFile != "" {
		if deps.Auth, err = auth(name, client, &server.KubeletConfiguration, cfg.ClientCAFile); err != nil {
			return nil, fmt.Errorf("node %s: %w", name, err)
		}
		// As cmd/kubelet/app's InitializeTLS: ask for a client certificate,
		// which the x509 authenticator then verifies.
		deps.TLSConfig.ClientAuth = tls.RequestClientCert
	}
	if err := userNamespaceGate(); err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	registering.Lock()
	defer registering.Unlock()
	if err := kubeletapp.RunKubelet(ctx, server, deps); err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	if err := releaseCollectors(); err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	started = true
	context.AfterFunc(ctx, release)
	return &Node{Name: name, Address: addr, Port: port, dir: dir, real: cfg.RealContainers}, nil
}

// hostDir is the host file system of cfg's node, whose kubelet's root
// directory is dir: cfg.HostDir, or host in dir; "" for a node of real
// containers, whose host is the machine.
func hostDir(cfg Config, dir string) string {
	switch {
	case cfg.RealContainers:
		return ""
	case cfg.HostDir != "":
		return cfg.HostDir
	}
	return filepath.Join(dir, "host")
}

// osInterface is what the kubelet uses for files: the real one for real
// containers; else kubemark's fake, which writes nothing, but stats the
// simulated runtime's real log files for the log manager.
func osInterface(real bool) kubecontainer.OSInterface {
	if real {
		return &kubecontainer.RealOS{}
	}
	return &containertest.FakeOS{StatFn: os.Stat}
}

// auth is the kubelet API's authentication and authorization as
// cmd/kubelet/app's BuildAuth makes them (client certificates against the
// cluster CA, bearer tokens by TokenReview, every request authorized by
// SubjectAccessReview), with one difference: the CA is read once, as
// static content, where BuildAuthn watches the file. The cluster CA does
// not change while podtrace runs, and a watch per kubelet would take one
// of the host's inotify instances (128 by default) for every node.
func auth(name string, client kubernetes.Interface, c *kubeletconfig.KubeletConfiguration, ca string) (kubeletserver.AuthInterface, error) {
	c.Authentication.X509.ClientCAFile = ca
	c.Authentication.Anonymous.Enabled = false
	c.Authentication.Webhook.Enabled = true
	c.Authorization.Mode = kubeletconfig.KubeletAuthorizationModeWebhook
	caPEM, err := os.ReadFile(ca)
	if err != nil {
		return nil, err
	}
	caContent, err := dynamiccertificates.NewStaticCAContent("client-ca-bundle", caPEM)
	if err != nil {
		return nil, err
	}
	authn, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		Anonymous:                          &apiserver.AnonymousAuthConfig{Enabled: false},
		CacheTTL:                           c.Authentication.Webhook.CacheTTL.Duration,
		ClientCertificateCAContentProvider: caContent,
		WebhookRetryBackoff:                genericoptions.DefaultAuthWebhookRetryBackoff(),
		TokenAccessReviewClient:            client.AuthenticationV1(),
	}.New()
	if err != nil {
		return nil, err
	}
	authz, err := kubeletapp.BuildAuthz(client.AuthorizationV1(), c.Authorization)
	if err != nil {
		return nil, err
	}
	return kubeletserver.NewKubeletAuth(authn, kubeletserver.NewNodeAuthorizerAttributesGetter(types.NodeName(name)), authz, caContent), nil
}

// recorder is the kubelet's event recorder as cmd/kubelet/app makes it,
// writing Events as the node, plus cfg.OnEvent watching them.
func recorder(ctx context.Context, cfg Config, client kubernetes.Interface) record.EventRecorderLogger {
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	if cfg.OnEvent != nil {
		b.StartEventWatcher(cfg.OnEvent)
	}
	return b.NewRecorder(legacyscheme.Scheme, v1.EventSource{Component: "kubelet", Host: cfg.Spec.Name})
}

// clients returns the kubelet's API client and its heartbeat client (node
// status and lease: a short timeout and no client-side rate limit), as
// cmd/kubelet/app builds them. Not every loop of an in-process kubelet
// stops with its context (some run until the process exits), so when ctx
// ends the node closes its connections, as the kubelet does on certificate
// rotation, and keeps closing any new one for a while: otherwise their
// open watches hold kube-apiserver's shutdown until it times out.
func clients(ctx context.Context, kc *rest.Config) (client, heartbeat kubernetes.Interface, err error) {
	d := connrotation.NewDialer((&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext)
	c := rest.CopyConfig(kc)
	c.Dial = d.DialContext
	hb := rest.CopyConfig(c)
	hb.Timeout = 40 * time.Second // the node lease duration
	hb.QPS = -1
	if client, err = kubernetes.NewForConfig(c); err != nil {
		return nil, nil, err
	}
	if heartbeat, err = kubernetes.NewForConfig(hb); err != nil {
		return nil, nil, err
	}
	context.AfterFunc(ctx, func() { go closeFor(d, time.Minute) })
	return client, heartbeat, nil
}

func closeFor(d *connrotation.Dialer, period time.Duration) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for end := time.Now().Add(period); time.Now().Before(end); <-tick.C {
		d.CloseAll()
	}
}

// volumePlugins are the volume types a node mounts: the ones that only
// write files under the kubelet's root directory, hostPath, on the node's
// host file system hostDir (hostPathPlugins), and image volumes, which the
// runtime mounts.
func volumePlugins(hostDir string) []volume.VolumePlugin {
	p := hostPathPlugins(hostDir)
	p = append(p, emptydir.ProbeVolumePlugins()...)
	p = append(p, secret.ProbeVolumePlugins()...)
	p = append(p, configmap.ProbeVolumePlugins()...)
	p = append(p, downwardapi.ProbeVolumePlugins()...)
	p = append(p, projected.ProbeVolumePlugins()...)
	if utilfeature.DefaultFeatureGate.Enabled(features.ImageVolume) { // as cmd/kubelet/app's ProbeVolumePlugins
		p = append(p, image.ProbeVolumePlugins()...)
	}
	return p
}

// userNamespaceGate turns on the kubelet's KubeletInUserNamespace feature
// gate (process-wide, once), as rootless Kubernetes (kind, k3s, usernetes)
// does: inside podtrace's pod network namespace (engine/podnet) the
// kubelet then goes on without what a user namespace denies it, such as
// the OOM watcher's /dev/kmsg, the host's kernel log, which no simulated
// node should read. Outside a user namespace the gate changes nothing.
var userNamespaceGate = sync.OnceValue(func() error {
	return utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{string(features.KubeletInUserNamespace): true})
})
