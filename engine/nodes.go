package engine

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"time"

	oteltrace "go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	internalapi "k8s.io/cri-api/pkg/apis"
	kubeletutil "k8s.io/kubernetes/pkg/kubelet/util"
	nodeutil "k8s.io/kubernetes/pkg/util/node"

	crictrd "github.com/podtrace/podtrace/engine/cri/containerd"
	crisim "github.com/podtrace/podtrace/engine/cri/sim"
	crihooks "github.com/podtrace/podtrace/engine/hooks/cri"
	"github.com/podtrace/podtrace/engine/identity"
	"github.com/podtrace/podtrace/engine/node"
	"github.com/podtrace/podtrace/engine/pki"
	"github.com/podtrace/podtrace/engine/podnet"
	"github.com/podtrace/podtrace/engine/upstream"
	"github.com/podtrace/podtrace/version"
)

// CRI is one node's container runtime as the kubelet sees it over CRI.
type CRI struct {
	Runtime internalapi.RuntimeService
	Images  internalapi.ImageManagerService
}

// nodeIP gives node i (from 0) its InternalIP in the pod network namespace
// (engine/podnet), made local there.
func nodeIP(i int) (net.IP, error) {
	ip := podnet.HostIP(i + 2)
	return ip, podnet.AddRange(ip.String() + "/32")
}

// startNodes starts one real kubelet per node, concurrently, each on its
// runtime behind podtrace's CRI interposer.
func (e *Engine) startNodes(ctx context.Context, cfg Config) error {
	hostIP, err := utilnet.ResolveBindAddress(nil)
	if err != nil {
		hostIP = nil // the kubelet reports no InternalIP; its API is then unreachable
	}
	e.Nodes = make([]*node.Node, len(cfg.Nodes))
	e.CRIHooks = make([]*crihooks.Hooks, len(cfg.Nodes))
	var g errgroup.Group
	var sims []*crisim.Runtime
	if cfg.Containerd != nil {
		cfg.Containerd.HandlePlugin(e.pluginHandler)
	}
	if cfg.Containerd != nil || podnet.Inside() {
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
	runtimes := make([]CRI, len(cfg.Nodes))
	tps := make([]oteltrace.TracerProvider, len(cfg.Nodes)) // the kubelets', shared with containerd's CRI clients
	for i, n := range cfg.Nodes {
		var hooks *crihooks.Hooks
		switch {
		case cfg.Containerd != nil:
			if tps[i], err = node.TracerProvider(ctx, n.Name, tracing); err != nil {
				return fmt.Errorf("node %s: %w", n.Name, err)
			}
			cn, err := cfg.Containerd.StartNode(ctx, n.Name, n.PodCIDR, tps[i], e.podRoutes(cfg, i)...)
			if err != nil {
				return err
			}
			runtimes[i] = CRI{Runtime: cn.Runtime, Images: cn.Images}
		case cfg.NewCRI != nil:
			rt, err := cfg.NewCRI(n, e, cfg.Seed+int64(i))
			if err != nil {
				return fmt.Errorf("node %s: %w", n.Name, err)
			}
			runtimes[i] = rt
		default:
			simCfg := crisim.Config{Node: n.Name, PodCIDR: n.PodCIDR, Seed: cfg.Seed + int64(i),
				Speed: e.Speed, StateFile: filepath.Join(e.DataDir, "runtime", n.Name+".json"),
				Dir: filepath.Join(e.DataDir, "runtime", n.Name)}
			// The runtime's own CRI spans, as containerd 2.x sends them
			// (none without a tracing block).
			if tracing != nil {
				if simCfg.TracerProvider, err = node.NewTracerProvider(ctx, crisim.ServiceName, n.Name, tracing); err != nil {
					return fmt.Errorf("node %s: %w", n.Name, err)
				}
			}
			var sim *crisim.Runtime
			if cfg.Untraced {
				sim, err = crisim.New(simCfg)
			} else {
				hooks, sim, err = crihooks.NewSim(e.Tracer, simCfg)
			}
			if err != nil {
				return fmt.Errorf("node %s: %w", n.Name, err)
			}
			sims = append(sims, sim)
			go wait.UntilWithContext(ctx, func(ctx context.Context) { _ = sim.Save(ctx) }, 2*time.Second)
			runtimes[i] = CRI{Runtime: sim, Images: sim}
		}
		if hooks == nil && !cfg.Untraced {
			hooks = crihooks.New(e.Tracer, n.Name, runtimes[i].Runtime, runtimes[i].Images)
		}
		if hooks != nil {
			runtimes[i] = CRI{Runtime: hooks.Runtime(), Images: hooks.Images()}
		}
		e.CRIHooks[i] = hooks
	}
	if cfg.Untraced {
		e.CRIHooks = nil
	}
	for i, n := range cfg.Nodes {
		g.Go(func() error {
			kc, err := e.RestConfig(identity.NodeUser(n.Name), "kubelet/"+version.Kubernetes+" (podtrace)")
			if err != nil {
				return err
			}
			ips := []net.IP{net.IPv4(127, 0, 0, 1)}
			var ownIP net.IP
			if podnet.Inside() {
				if ownIP, err = nodeIP(i); err != nil {
					return err
				}
				ips = append(ips, ownIP)
			} else if hostIP != nil {
				ips = append(ips, hostIP)
			}
			cert, err := e.PKI.IssueKubeletServing(n.Name, ips...)
			if err != nil {
				return err
			}
			e.Nodes[i], err = node.Start(ctx, node.Config{Spec: n, Dir: filepath.Join(e.DataDir, "kubelet", n.Name),
				KubeConfig: kc, Runtime: runtimes[i].Runtime, Images: runtimes[i].Images, ServingCert: cert,
				ClientCAFile: e.PKI.Path(pki.CACertFile), Tracker: e.tracker(i), OnEvent: e.onEvent(i),
				MaxContainerRestartPeriod: cfg.MaxContainerRestartPeriod, NodeIP: ownIP, RealContainers: cfg.Containerd != nil,
				ClusterDNS: e.dnsServers, Tracing: tracing, TracerProvider: tps[i]})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	e.sims = sims
	if len(sims) > 0 && !cfg.Untraced {
		go crihooks.RecheckOnFaults(ctx, e.Tracer, sims)
	}
	return e.waitNodesReady(ctx, len(cfg.Nodes))
}

// tracker is node i's seam in its kubelet's pod startup latency tracker
// (nil without an interposer).
func (e *Engine) tracker(i int) func(kubeletutil.PodStartupLatencyTracker) kubeletutil.PodStartupLatencyTracker {
	if i >= len(e.CRIHooks) {
		return nil
	}
	return e.CRIHooks[i].Tracker
}

// onEvent is node i's seam watching its kubelet's Events (nil without an
// interposer).
func (e *Engine) onEvent(i int) func(*v1.Event) {
	if i >= len(e.CRIHooks) {
		return nil
	}
	return e.CRIHooks[i].OnEvent
}

// pluginHandler is the interposer of node, which answers its containerd's
// podtrace-cni; nil before the node starts.
func (e *Engine) pluginHandler(node string) crictrd.PluginHandler {
	for _, h := range e.CRIHooks {
		if h != nil && h.NodeName() == node {
			return h
		}
	}
	return nil
}

// nodeReadyTimeout bounds how long Start waits for the kubelets to
// register their Nodes and report Ready.
const nodeReadyTimeout = 2 * time.Minute

// schedulable reports whether node is Ready and the node lifecycle
// controller has taken its node.kubernetes.io/not-ready taint away (the
// kubelet registers with it).
func schedulable(node *v1.Node) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == v1.TaintNodeNotReady {
			return false
		}
	}
	return nodeutil.IsNodeReady(node)
}

// WaitNodesReady waits until every node of the engine is Ready and
// schedulable again (after a fault on their readiness, a restart), for up
// to two minutes or until ctx ends.
func (e *Engine) WaitNodesReady(ctx context.Context) error {
	return e.waitNodesReady(ctx, e.NodeCount())
}

// waitNodesReady waits until n Nodes are Ready and schedulable, with their
// pod ranges, as Start promises a running cluster.
func (e *Engine) waitNodesReady(ctx context.Context, n int) error {
	client := e.AdminClient()
	ready := 0
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, nodeReadyTimeout, true, func(ctx context.Context) (bool, error) {
		l, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		ready = 0
		for _, node := range l.Items {
			if schedulable(&node) && hasPodCIDR(&node, e.podCIDRs) {
				ready++
			}
		}
		return ready >= n, nil
	})
	if err != nil {
		return fmt.Errorf("nodes not Ready after %s (%d of %d): %w", nodeReadyTimeout, ready, n, err)
	}
	return nil
}
