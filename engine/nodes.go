package engine

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	crisim "github.com/podtrace/podtrace/engine/cri/sim"
	crihooks "github.com/podtrace/podtrace/engine/hooks/cri"
	"github.com/podtrace/podtrace/engine/identity"
	"github.com/podtrace/podtrace/engine/kubelet/nodes"
	"github.com/podtrace/podtrace/engine/node"
	"github.com/podtrace/podtrace/engine/pki"
	"github.com/podtrace/podtrace/engine/podnet"
	"github.com/podtrace/podtrace/version"
)

// CRI is one node's container runtime as the kubelet sees it over CRI.
type CRI struct {
	Runtime internalapi.RuntimeService
	Images  internalapi.ImageManagerService
}

// nodeIP gives node i (from 0) its InternalIP in the pod network namespace
// (engine/podnet), numbered as kind numbers its nodes: 172.18.0.2,
// 172.18.0.3, …; the address is made local there.
func nodeIP(i int) (net.IP, error) {
	n := i + 2
	ip := net.IPv4(172, 18, byte(n/256), byte(n%256))
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
	for i, n := range cfg.Nodes {
		var hooks *crihooks.Hooks
		if cfg.NewCRI != nil {
			rt, err := cfg.NewCRI(n, e, cfg.Seed+int64(i))
			if err != nil {
				return fmt.Errorf("node %s: %w", n.Name, err)
			}
			hooks = crihooks.New(e.Tracer, n.Name, rt.Runtime, rt.Images)
		} else {
			sim, err := newSim(n, cfg, filepath.Join(e.DataDir, "runtime", n.Name+".json"), cfg.Seed+int64(i), &hooks)
			if err != nil {
				return fmt.Errorf("node %s: %w", n.Name, err)
			}
			sims = append(sims, sim)
			go wait.UntilWithContext(ctx, func(ctx context.Context) { _ = sim.Save(ctx) }, 2*time.Second)
			hooks = crihooks.New(e.Tracer, n.Name, sim, sim)
		}
		e.CRIHooks[i] = hooks
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
				KubeConfig: kc, Runtime: hooks.Runtime(), Images: hooks.Images(), ServingCert: cert,
				ClientCAFile: e.PKI.Path(pki.CACertFile), Tracker: hooks.Tracker, OnEvent: hooks.OnEvent,
				MaxContainerRestartPeriod: cfg.MaxContainerRestartPeriod, NodeIP: ownIP})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	e.sims = sims
	if len(sims) > 0 {
		go recheckOnFaults(ctx, e, sims)
	}
	return e.waitNodesReady(ctx, len(cfg.Nodes))
}

// newSim returns the simulated runtime of node n, its network and health
// reported through the node's CRI interposer (*hooks, set once made), its
// records kept in stateFile across restarts, as containerd keeps them.
func newSim(n nodes.Spec, cfg Config, stateFile string, seed int64, hooks **crihooks.Hooks) (*crisim.Runtime, error) {
	var sim *crisim.Runtime
	var err error
	sim, err = crisim.New(crisim.Config{Node: n.Name, PodCIDR: n.PodCIDR, Seed: seed, Speed: cfg.Speed,
		Network: func(ctx context.Context, md *runtimeapi.PodSandboxMetadata, id string, add func() (string, error)) (string, error) {
			return (*hooks).Network(sim.RangeSet(), crisim.NetworkSetupError)(ctx, md, id, add)
		},
		ExtraPorts: func(md *runtimeapi.PodSandboxMetadata) []int32 { return (*hooks).ProbePorts(md) },
		Unhealthy:  func(md *runtimeapi.PodSandboxMetadata) bool { return (*hooks).Unhealthy(md) },
		StateFile:  stateFile,
	})
	return sim, err
}

// recheckOnFaults makes the simulated pods stop or resume answering on
// their addresses as ready faults come and go.
func recheckOnFaults(ctx context.Context, e *Engine, sims []*crisim.Runtime) {
	for {
		changed := e.Tracer.Faults.Changed()
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
		for _, s := range sims {
			s.Recheck()
		}
	}
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
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// waitNodesReady waits until n Nodes are Ready and schedulable, as Start
// promises a running cluster.
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
			if schedulable(&node) {
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
