// Package agent runs podtrace's node agents against any Kubernetes API
// server: each node is a kubelet that registers its Node, renews its Lease
// and runs the pods bound to it, with the same statuses, Events and stage
// events as in the embedded engine — like kwok, but with every node-side
// stage. Each is the real kubelet behind podtrace's CRI interposer, on the
// simulated CRI runtime or on a containerd of the node's own
// (engine/nodeset, as the embedded engine runs its nodes).
package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/clock"

	"github.com/podtrace/podtrace/engine/cri"
	"github.com/podtrace/podtrace/engine/nodes"
	"github.com/podtrace/podtrace/engine/nodeset"
	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/version"
)

// UserAgent is the client name the agents' kubelets send.
const UserAgent = "kubelet/" + version.Kubernetes + " (podtrace agent)"

// Config configures the agents.
type Config struct {
	// RestConfig reaches the API server (from a kubeconfig). The
	// credentials need what a kubelet needs: nodes, leases, pods, pods/status,
	// events, configmaps and secrets.
	RestConfig *rest.Config
	// Nodes to register and run.
	Nodes []nodes.Spec
	// Tracer receives the node-side stage events; one feeding Hub (or
	// nowhere) when nil.
	Tracer *trace.Tracer
	// Hub receives the stage events when Tracer is nil.
	Hub *trace.Hub
	// Seed makes the simulated runtime repeatable.
	Seed int64
	// DataDir holds the kubelets' root directories.
	DataDir string
	// Runtime, when set, is the container runtime every node's real
	// kubelet runs on (engine/cri/runtimes starts one by name), which the
	// caller closes after the agents; nil: the simulated runtime.
	Runtime *cri.Host
	// ClusterDNS are the addresses of the joined cluster's DNS Service,
	// the kubelets' clusterDNS; none leaves pods the host's resolvers (the
	// joined cluster's DNS is not podtrace's to know).
	ClusterDNS []string
}

// Agent is a set of running node agents.
type Agent struct {
	cfg    Config
	rc     *rest.Config
	client kubernetes.Interface
	// Nodes are the kubelets and their interposers, once started.
	Nodes *nodeset.Set
}

// New checks cfg and builds one kubelet per node.
func New(cfg Config) (*Agent, error) {
	if cfg.RestConfig == nil {
		return nil, errors.New("agent: RestConfig is required")
	}
	if len(cfg.Nodes) == 0 {
		return nil, errors.New("agent: no nodes to run")
	}
	if cfg.Tracer == nil {
		if cfg.Hub == nil {
			cfg.Hub = trace.NewHub()
		}
		cfg.Tracer = trace.New(clock.RealClock{}, cfg.Hub)
	}
	rc := rest.CopyConfig(cfg.RestConfig)
	rc.UserAgent = UserAgent
	if rc.QPS == 0 {
		rc.QPS, rc.Burst = 50, 100
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("agent: client: %w", err)
	}
	if cfg.DataDir == "" {
		return nil, errors.New("agent: the kubelets need a DataDir")
	}
	return &Agent{cfg: cfg, rc: rc, client: client}, nil
}

// Hub is where the agent's stage events are published when Config.Tracer
// was nil (else nil): subscribe before Start to miss none.
func (a *Agent) Hub() *trace.Hub { return a.cfg.Hub }

// Start checks that the API server answers, then starts every kubelet;
// they register their Nodes in the background and stop when ctx is done.
func (a *Agent) Start(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := a.client.CoreV1().Nodes().List(cctx, metav1.ListOptions{Limit: 1}); err != nil {
		return fmt.Errorf("cannot reach the API server: %s", firstLine(err))
	}
	return a.startNodes(ctx)
}

// startNodes starts a real kubelet per node (engine/nodeset), behind an
// interposer that also reports the ready stage (the API server is not
// podtrace's: no seam there sees the kubelet's status writes). Its API, on
// loopback with a self-signed certificate as a kubelet makes one without a
// serving certificate, answers only this machine.
func (a *Agent) startNodes(ctx context.Context) error {
	cfg := nodeset.Config{Nodes: a.cfg.Nodes, DataDir: a.cfg.DataDir, Tracer: a.cfg.Tracer,
		Seed: a.cfg.Seed, Credentials: a.credentials, ReportReady: true, ClusterDNS: a.cfg.ClusterDNS}
	if a.cfg.Runtime != nil {
		cfg.Runtime = a.cfg.Runtime.NewNode
	}
	set, err := nodeset.Start(ctx, cfg)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	a.Nodes = set
	return nil
}

// credentials are node n's: the agent's client configuration and a
// self-signed serving certificate for loopback.
func (a *Agent) credentials(_ int, n nodes.Spec) (nodeset.Credentials, error) {
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(n.Name, []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	if err != nil {
		return nodeset.Credentials{}, fmt.Errorf("node %s: %w", n.Name, err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nodeset.Credentials{}, fmt.Errorf("node %s: %w", n.Name, err)
	}
	return nodeset.Credentials{KubeConfig: a.rc, ServingCert: cert}, nil
}

// Tracer returns the tracer the kubelets report to.
func (a *Agent) Tracer() *trace.Tracer { return a.cfg.Tracer }

// Client returns the client the kubelets use.
func (a *Agent) Client() kubernetes.Interface { return a.client }

// WaitReady waits until every node of the agent reports Ready=True, until
// ctx ends.
func (a *Agent) WaitReady(ctx context.Context) error {
	if a.Nodes == nil {
		return errors.New("agent: not started")
	}
	return a.Nodes.WaitReady(ctx, a.client, nil)
}

func firstLine(err error) string {
	s := err.Error()
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	return s
}
