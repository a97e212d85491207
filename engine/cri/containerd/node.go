package containerd

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	oteltrace "go.opentelemetry.io/otel/trace"
	noopoteltrace "go.opentelemetry.io/otel/trace/noop"
	internalapi "k8s.io/cri-api/pkg/apis"
	criclient "k8s.io/cri-client/pkg"

	"github.com/podtrace/podtrace/engine/cri"
	"github.com/podtrace/podtrace/engine/cri/sim/ipam"
	"github.com/podtrace/podtrace/images"
)

// Node is one node's containerd, serving CRI to the node's kubelet.
type Node struct {
	// Name is the node's.
	Name string
	// Daemon is the node's containerd.
	Daemon *Daemon
	// Runtime and Images are containerd's CRI services, as the kubelet's
	// remote runtime client reaches them over the daemon's socket.
	Runtime internalapi.RuntimeService
	Images  internalapi.ImageManagerService
	// Gateway is the pods' gateway, the node's address on their bridge:
	// where node-local services answer them (cluster DNS, NodePorts).
	Gateway net.IP

	dir    string
	bridge string
}

// StartNode starts node's containerd with its CRI plugin: pods get
// addresses from podCIDR on a bridge of their own, through podtrace-cni
// and the standard plugins; podtrace.dev images come from the loopback
// registry, and others from the mirror, if any, else their registries.
// tp traces the CRI client's calls (give it the kubelet's, so that they
// nest in its syncPod spans); nil traces nothing. Pods route the ranges
// in routes (CIDRs: the Service range, the cluster's pod range) through
// their gateway, the host, where kube-proxy's rules and the other nodes'
// bridges are; nothing else leaves their bridge.
func (h *Host) StartNode(ctx context.Context, node, podCIDR string, tp oteltrace.TracerProvider, routes ...string) (_ *Node, err error) {
	dir := filepath.Join(h.cfg.Dir, "nodes", node)
	n := &Node{Name: node, dir: dir, bridge: bridgeName(dir)}
	if n.Gateway, err = makeBridge(n.bridge, podCIDR); err != nil {
		return nil, fmt.Errorf("node %s: %w", node, err)
	}
	ipam, err := ipam.New(podCIDR)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", node, err)
	}
	h.plugins.setRange(node, ipam.RangeSet())
	binDir, confDir, hostsDir := filepath.Join(dir, "cni", "bin"), filepath.Join(dir, "cni", "conf"), filepath.Join(dir, "certs.d")
	if err := h.pluginBin(binDir); err != nil {
		return nil, fmt.Errorf("node %s: %w", node, err)
	}
	if err := writeConflist(confDir, n, podCIDR, routes, h.plugins.addr(), filepath.Join(dir, "cni", "ipam")); err != nil {
		return nil, fmt.Errorf("node %s: %w", node, err)
	}
	if err := writeHosts(hostsDir, h.Registry.Host, h.cfg.Mirror, h.cfg.E2EImages); err != nil {
		return nil, fmt.Errorf("node %s: %w", node, err)
	}
	if n.Daemon, err = StartDaemon(ctx, h.cfg.Bin, filepath.Join(dir, "containerd"), criTOML(binDir, confDir, hostsDir, filepath.Join(dir, "runc"))); err != nil {
		return nil, fmt.Errorf("node %s: %w", node, err)
	}
	defer func() {
		if err != nil {
			_ = n.Close(context.WithoutCancel(ctx))
		}
	}()
	endpoint := "unix://" + n.Daemon.Address
	if tp == nil {
		tp = noopoteltrace.NewTracerProvider()
	}
	if n.Runtime, err = criclient.NewRemoteRuntimeService(ctx, endpoint, 2*time.Minute, tp, false); err != nil {
		return nil, fmt.Errorf("node %s: %w", node, err)
	}
	if n.Images, err = criclient.NewRemoteImageService(ctx, endpoint, 2*time.Minute, tp, false); err != nil {
		return nil, fmt.Errorf("node %s: %w", node, err)
	}
	h.mu.Lock()
	h.nodes = append(h.nodes, n)
	h.mu.Unlock()
	return n, nil
}

// NewNode is containerd's cri.Factory on h: the node's containerd
// (StartNode), whose CRI client shares the kubelet's tracer provider,
// with cfg's Observer, if any, answering the node's podtrace-cni. The
// node stops with h (Close).
func (h *Host) NewNode(ctx context.Context, cfg cri.Config) (cri.Node, error) {
	n, err := h.StartNode(ctx, cfg.Name, cfg.PodCIDR, cfg.KubeletTracerProvider, cfg.Routes...)
	if err != nil {
		return cri.Node{}, err
	}
	h.plugins.observe(cfg.Name, cfg.Observer) // none: a node started again untraced answers no stale observer
	return cri.Node{Runtime: n.Runtime, Images: n.Images, RealContainers: true}, nil
}

// CRI is h as engine/cri's contract offers it: its NewNode, the pods'
// Gateway on each node's bridge, and its Close.
func (h *Host) CRI() *cri.Host {
	return &cri.Host{NewNode: h.NewNode, Gateway: Gateway, Close: h.Close}
}

// Close removes the node's pods (what a machine's reboot does to them),
// stops its containerd and removes its bridge.
func (n *Node) Close(ctx context.Context) error {
	var errs []error
	if n.Runtime != nil {
		errs = append(errs, removePods(ctx, n.Runtime))
	}
	if n.Daemon != nil {
		errs = append(errs, n.Daemon.Close())
	}
	errs = append(errs, deleteBridge(n.bridge), os.RemoveAll(filepath.Join(n.dir, "cni", "ipam")))
	return errors.Join(errs...)
}

// removePods stops and removes every sandbox (and so its containers).
func removePods(ctx context.Context, rt internalapi.RuntimeService) error {
	sbs, err := rt.ListPodSandbox(ctx, nil)
	if err != nil {
		return err
	}
	var errs []error
	for _, sb := range sbs {
		errs = append(errs, rt.StopPodSandbox(ctx, sb.Id), rt.RemovePodSandbox(ctx, sb.Id))
	}
	return errors.Join(errs...)
}

// Gateway is the pods' gateway in podCIDR: its first address, as the
// host-local IPAM plugin chooses it.
func Gateway(podCIDR *net.IPNet) net.IP {
	ip := slices.Clone(podCIDR.IP.Mask(podCIDR.Mask).To4())
	ip[3]++
	return ip
}

// bridgeName names a node's bridge after its directory (at most 15
// bytes, a Linux interface name's limit).
func bridgeName(dir string) string {
	return fmt.Sprintf("pt-%x", sha256.Sum256([]byte(dir)))[:13]
}

// pluginBin fills dir with the plugins containerd may run: podtrace-cni
// and the standard ones (links to them).
func (h *Host) pluginBin(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	found := map[string]bool{}
	for _, src := range h.cfg.PluginDirs {
		entries, _ := os.ReadDir(src)
		for _, e := range entries {
			if found[e.Name()] || e.IsDir() {
				continue
			}
			found[e.Name()] = true
			if err := os.Symlink(filepath.Join(src, e.Name()), filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	for _, p := range []string{"bridge", "host-local", "loopback", "portmap"} {
		if !found[p] {
			return fmt.Errorf("the CNI plugin %q is in none of %s (install containernetworking-plugins)", p, strings.Join(h.cfg.PluginDirs, ", "))
		}
	}
	return os.Symlink(h.cfg.Plugin, filepath.Join(dir, PluginName))
}

// writeConflist writes the node's network: podtrace-cni delegating to a
// bridge with host-local addresses from podCIDR, and to portmap for
// hostPorts. The bridge is the pods'
// gateway, so the node (and its kubelet's probes) reaches them; the pods
// route only routes through it, and get no default route: no pod traffic
// leaves the machine.
func writeConflist(dir string, n *Node, podCIDR string, routes []string, socket, ipamDir string) error {
	ipam := map[string]any{
		"type":    "host-local",
		"ranges":  [][]map[string]string{{{"subnet": podCIDR}}},
		"dataDir": ipamDir,
	}
	if len(routes) > 0 {
		var rs []map[string]string
		for _, r := range routes {
			rs = append(rs, map[string]string{"dst": r})
		}
		ipam["routes"] = rs
	}
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       "podtrace",
		"plugins": []any{map[string]any{
			"type":    PluginName,
			"node":    n.Name,
			"socket":  socket,
			"gateway": n.Gateway.String(),
			// The pods' hostPorts, which podtrace-cni serves through
			// portmap on the node's address (cmd/podtrace-cni/hostports.go).
			"capabilities": map[string]bool{"portMappings": true},
			"delegate": map[string]any{
				"type":        "bridge",
				"bridge":      n.bridge,
				"isGateway":   true,
				"ipMasq":      false,
				"hairpinMode": true,
				"ipam":        ipam,
			},
		}},
	}
	b, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "10-podtrace.conflist"), b, 0o644)
}

// writeHosts writes containerd's registry hosts (hosts.toml): podtrace's
// own images from the loopback registry, and with a mirror, every other
// pull from it alone (the _default host): an image it lacks is not found,
// and no pull leaves for the image's own registry. With e2e, the
// conformance suite's images (registry.k8s.io/e2e-test-images/...) come
// from the loopback registry first, then from the mirror or registry.k8s.io.
func writeHosts(dir, registry, mirror string, e2e bool) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	// images.Push keeps them under "<registry>/<path>" there.
	own := "http://" + registry + "/v2/" + images.Host
	files := map[string]string{
		images.Host: fmt.Sprintf("server = %q\n\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n  override_path = true\n", own, own),
	}
	if mirror != "" {
		files["_default"] = fmt.Sprintf("server = %q\n\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n", mirror, mirror)
	}
	if e2e {
		server, built := "https://"+images.E2ERegistry, "http://"+registry+"/v2/"+images.E2ERegistry
		if mirror != "" {
			server = mirror
		}
		files[images.E2ERegistry] = fmt.Sprintf("server = %q\n\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n  override_path = true\n", server, built)
	}
	for host, toml := range files {
		if err := os.MkdirAll(filepath.Join(dir, host), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, host, "hosts.toml"), []byte(toml), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// criTOML configures containerd's CRI plugin for a node: podtrace's pause
// image, runc through the v2 shim on overlayfs, the node's CNI network
// and registry hosts, and the streaming server (exec, attach,
// port-forward) on loopback.
func criTOML(binDir, confDir, hostsDir, runcRoot string) string {
	return fmt.Sprintf(`
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  disable_apparmor = true
  # Never below podtrace's own score: lowering it takes CAP_SYS_RESOURCE,
  # which root in a container often lacks (as kind in a container does).
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
    max_conf_num = 1
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %q
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      Root = %q
`, images.Pause, binDir, confDir, hostsDir, runcRoot)
}
