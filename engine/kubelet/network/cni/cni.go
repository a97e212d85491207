// Package cni is the kubelet's network plugin for real containers: it
// attaches each pod's network namespace to a per-node bridge through libcni
// and the standard plugins (bridge, host-local, loopback), and detaches it
// with CNI DEL. Each node gets a network namespace of its own that holds
// the bridge and routes to the pods, so no pod address or bridge ever
// appears in the host's namespace and no traffic can leave the machine.
package cni

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/types"
	types100 "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"

	"github.com/podtrace/podtrace/engine/kubelet/network"
	"github.com/podtrace/podtrace/engine/kubelet/network/cni/netns"
)

// DefaultPluginDirs are where Debian's containernetworking-plugins and the
// upstream release install the plugin binaries.
var DefaultPluginDirs = []string{"/usr/lib/cni", "/opt/cni/bin"}

// Config configures one node's plugin.
type Config struct {
	// Node names the network ("podtrace-<Node>") and the node namespace.
	Node string
	// PodCIDR is the node's pod range, e.g. 10.244.1.0/24; the bridge takes
	// its first address.
	PodCIDR string
	// Dir holds the network configuration, the IPAM state, libcni's cache
	// and the node's namespace (required).
	Dir string
	// PluginDirs to search for plugins; DefaultPluginDirs when empty.
	PluginDirs []string
	// NetNSPath returns the network namespace of a sandbox (the runtime
	// creates it with the sandbox).
	NetNSPath func(sandboxID string) (string, error)
	// Fresh drops IP allocations and cached results left by an earlier
	// run (whose pods are all gone).
	Fresh bool
	// ConfigOverride, when set, replaces the generated network
	// configuration list (JSON), e.g. to break it on purpose.
	ConfigOverride []byte
}

// Plugin sets pods' networks up and down with libcni.
type Plugin struct {
	cfg     Config
	cni     *libcni.CNIConfig
	list    *libcni.NetworkConfigList
	lo      *libcni.NetworkConfigList
	nodeNS  string
	ipamDir string
	// pluginLog receives the plugins' stderr.
	pluginLog *os.File

	mu   sync.Mutex
	pods map[string]string // sandbox ID -> netns path used at ADD
}

// New writes the node's network configuration and creates its namespace.
func New(cfg Config) (*Plugin, error) {
	if cfg.Dir == "" || cfg.NetNSPath == nil {
		return nil, errors.New("cni: Dir and NetNSPath are required")
	}
	if _, _, err := net.ParseCIDR(cfg.PodCIDR); err != nil {
		return nil, fmt.Errorf("cni: pod CIDR: %w", err)
	}
	if len(cfg.PluginDirs) == 0 {
		cfg.PluginDirs = DefaultPluginDirs
	}
	if _, err := (&libcni.CNIConfig{Path: cfg.PluginDirs}).ValidateNetworkList(context.Background(), loList()); err != nil {
		return nil, fmt.Errorf("cni: plugins not found in %s (install containernetworking-plugins): %w", strings.Join(cfg.PluginDirs, ":"), err)
	}
	p := &Plugin{cfg: cfg, pods: map[string]string{}, ipamDir: filepath.Join(cfg.Dir, "ipam")}
	if cfg.Fresh {
		for _, d := range []string{p.ipamDir, filepath.Join(cfg.Dir, "cache")} {
			if err := os.RemoveAll(d); err != nil {
				return nil, fmt.Errorf("cni: %w", err)
			}
		}
	}
	for _, d := range []string{cfg.Dir, p.ipamDir, filepath.Join(cfg.Dir, "cache")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("cni: %w", err)
		}
	}
	raw := cfg.ConfigOverride
	if raw == nil {
		raw = p.conflist()
	}
	confPath := filepath.Join(cfg.Dir, "10-podtrace.conflist")
	if err := os.WriteFile(confPath, raw, 0o644); err != nil {
		return nil, fmt.Errorf("cni: %w", err)
	}
	list, err := libcni.NetworkConfFromBytes(raw)
	if err != nil {
		return nil, fmt.Errorf("cni: load %s: %w", confPath, err)
	}
	p.list, p.lo = list, loList()
	// An explicit exec: libcni would make its default lazily on each call
	// (a data race between pods set up at once) with the plugins' stderr
	// on the terminal the UI draws on; here it goes to a file.
	if p.pluginLog, err = os.OpenFile(filepath.Join(cfg.Dir, "plugins.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		return nil, fmt.Errorf("cni: %w", err)
	}
	p.cni = libcni.NewCNIConfigWithCacheDir(cfg.PluginDirs, filepath.Join(cfg.Dir, "cache"),
		&invoke.DefaultExec{RawExec: &invoke.RawExec{Stderr: p.pluginLog}, PluginDecoder: version.PluginDecoder{}})
	p.nodeNS = filepath.Join(cfg.Dir, "node.netns")
	_ = netns.Remove(p.nodeNS) // left over by a killed run
	if _, err := netns.Create(p.nodeNS); err != nil {
		p.pluginLog.Close()
		return nil, fmt.Errorf("cni: node namespace: %w", err)
	}
	return p, nil
}

// NetworkName is the CNI network name of the node.
func (p *Plugin) NetworkName() string { return "podtrace-" + p.cfg.Node }

// NodeNetNS returns the path of the node's network namespace, from which
// pods are reachable at their IPs.
func (p *Plugin) NodeNetNS() string { return p.nodeNS }

func (p *Plugin) conflist() []byte {
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       p.NetworkName(),
		"plugins": []any{map[string]any{
			"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
			"ipam": map[string]any{
				"type":    "host-local",
				"ranges":  [][]map[string]string{{{"subnet": p.cfg.PodCIDR}}},
				"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
				"dataDir": p.ipamDir,
			},
		}},
	}
	b, _ := json.MarshalIndent(conf, "", "  ")
	return b
}

func loList() *libcni.NetworkConfigList {
	l, _ := libcni.NetworkConfFromBytes([]byte(`{"cniVersion":"1.0.0","name":"podtrace-lo","plugins":[{"type":"loopback"}]}`))
	return l
}

func (p *Plugin) runtimeConf(pod network.Pod, ns string) *libcni.RuntimeConf {
	return &libcni.RuntimeConf{ContainerID: pod.SandboxID, NetNS: ns, IfName: "eth0", Args: [][2]string{
		{"IgnoreUnknown", "1"}, {"K8S_POD_NAMESPACE", pod.Namespace}, {"K8S_POD_NAME", pod.Name},
		{"K8S_POD_INFRA_CONTAINER_ID", pod.SandboxID}, {"K8S_POD_UID", pod.UID}}}
}

// SetUp runs CNI ADD (loopback, then the bridge network) for the sandbox
// from the node's namespace and returns the pod's address.
func (p *Plugin) SetUp(ctx context.Context, pod network.Pod) (network.Result, error) {
	ns, err := p.cfg.NetNSPath(pod.SandboxID)
	if err != nil {
		return network.Result{}, err
	}
	var res network.Result
	err = netns.Do(p.nodeNS, func() error {
		lrt := p.runtimeConf(pod, ns)
		lrt.IfName = "lo"
		if _, err := p.cni.AddNetworkList(ctx, p.lo, lrt); err != nil {
			return fmt.Errorf("plugin type=%q failed (add): %w", "loopback", err)
		}
		r, err := p.cni.AddNetworkList(ctx, p.list, p.runtimeConf(pod, ns))
		if err != nil {
			return fmt.Errorf("plugin type=%q failed (add): %w", "bridge", err)
		}
		res, err = toResult(r)
		return err
	})
	if err != nil {
		return network.Result{}, err
	}
	p.mu.Lock()
	p.pods[pod.SandboxID] = ns
	p.mu.Unlock()
	return res, nil
}

func toResult(r types.Result) (network.Result, error) {
	cur, err := types100.NewResultFromResult(r)
	if err != nil {
		return network.Result{}, fmt.Errorf("convert CNI result: %w", err)
	}
	var out network.Result
	for _, ifc := range cur.Interfaces {
		switch {
		case ifc.Sandbox != "":
			out.Interface = ifc.Name
		case ifc.Name != "cni0":
			out.HostVeth = ifc.Name
		}
	}
	for _, ip := range cur.IPs {
		if ip.Address.IP.To4() != nil {
			out.IP = ip.Address.IP.String()
			if ip.Gateway != nil {
				out.Gateway = ip.Gateway.String()
			}
			break
		}
	}
	if out.IP == "" {
		return out, errors.New("CNI result has no IPv4 address")
	}
	return out, nil
}

// TearDown runs CNI DEL for the sandbox, releasing its address; it is
// idempotent and works after the namespace is gone.
func (p *Plugin) TearDown(ctx context.Context, pod network.Pod) error {
	p.mu.Lock()
	ns, known := p.pods[pod.SandboxID]
	p.mu.Unlock()
	if !known {
		ns, _ = p.cfg.NetNSPath(pod.SandboxID)
	}
	if ns != "" {
		if _, err := os.Stat(ns); err != nil {
			ns = ""
		}
	}
	err := netns.Do(p.nodeNS, func() error {
		if err := p.cni.DelNetworkList(ctx, p.list, p.runtimeConf(pod, ns)); err != nil {
			return fmt.Errorf("plugin type=%q failed (delete): %w", "bridge", err)
		}
		lrt := p.runtimeConf(pod, ns)
		lrt.IfName = "lo"
		if err := p.cni.DelNetworkList(ctx, p.lo, lrt); err != nil {
			return fmt.Errorf("plugin type=%q failed (delete): %w", "loopback", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	p.mu.Lock()
	delete(p.pods, pod.SandboxID)
	p.mu.Unlock()
	return nil
}

// Allocations returns the addresses host-local has handed out and not yet
// released.
func (p *Plugin) Allocations() ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(p.ipamDir, p.NetworkName()))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if net.ParseIP(e.Name()) != nil {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// Close removes the node's namespace (and with it the bridge) and closes
// the plugins' log. Pods should be torn down first.
func (p *Plugin) Close() error {
	p.pluginLog.Close()
	return netns.Remove(p.nodeNS)
}
