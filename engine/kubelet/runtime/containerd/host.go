package containerd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/containerd/containerd/v2/client"
	ctrdlog "github.com/containerd/log"

	crictrd "github.com/podtrace/podtrace/engine/cri/containerd"
	"github.com/podtrace/podtrace/engine/kubelet/network"
	"github.com/podtrace/podtrace/engine/kubelet/network/cni"
	"github.com/podtrace/podtrace/engine/registry"
	"github.com/podtrace/podtrace/images"
)

// HostConfig configures StartHost.
type HostConfig struct {
	// Dir holds containerd's directories, the registry's blobs, the image
	// build cache and each node's namespaces and logs (required).
	Dir string
	// Address of a containerd to use instead of starting one.
	Address string
	// Bin is the containerd binary; from PATH when empty.
	Bin string
	// BuildCache keeps compiled image binaries across runs; Dir/build when empty.
	BuildCache string
	// Log receives the registry's request log and the containerd client
	// library's log (a process-wide setting); Dir/client.log when nil.
	Log io.Writer
}

// Host is everything real-container nodes share on this machine: one
// containerd, the loopback registry holding podtrace's images, and the
// per-node runtimes and CNI plugins made from them.
type Host struct {
	cfg      HostConfig
	Daemon   *crictrd.Daemon // nil when Address was given
	Client   *client.Client
	Registry *registry.Registry

	ownLog   *os.File
	mu       sync.Mutex
	runtimes []*Runtime
	networks []*cni.Plugin
}

// StartHost starts (or connects to) containerd, starts the loopback
// registry, builds podtrace's images and pushes them there.
func StartHost(ctx context.Context, cfg HostConfig) (_ *Host, err error) {
	if cfg.Dir == "" {
		return nil, errors.New("containerd host: Dir is required")
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("--runtime containerd needs root (containerd, runc and CNI create namespaces and cgroups)")
	}
	if cfg.BuildCache == "" {
		cfg.BuildCache = filepath.Join(cfg.Dir, "build")
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("containerd host: %w", err)
	}
	if err := os.MkdirAll(cfg.BuildCache, 0o755); err != nil {
		return nil, fmt.Errorf("containerd host: %w", err)
	}
	h := &Host{}
	if cfg.Log == nil {
		f, err := os.OpenFile(filepath.Join(cfg.Dir, "client.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("containerd host: %w", err)
		}
		cfg.Log = f
		h.ownLog = f
	}
	// containerd's client logs through logrus' standard logger, to stderr
	// by default: the terminal belongs to the UI.
	ctrdlog.L.Logger.SetOutput(cfg.Log)
	h.cfg = cfg
	defer func() {
		if err != nil {
			_ = h.Close(context.WithoutCancel(ctx))
		}
	}()
	addr := cfg.Address
	if addr == "" {
		if h.Daemon, err = crictrd.StartDaemon(ctx, cfg.Bin, filepath.Join(cfg.Dir, "containerd"), ""); err != nil {
			return nil, err
		}
		addr = h.Daemon.Address
	}
	if h.Client, err = client.New(addr); err != nil {
		return nil, fmt.Errorf("connect to containerd at %s: %w", addr, err)
	}
	if h.Registry, err = registry.Start(ctx, registry.Config{BlobDir: filepath.Join(cfg.Dir, "registry"), Log: cfg.Log}); err != nil {
		return nil, err
	}
	built, err := images.Build(ctx, images.Config{CacheDir: cfg.BuildCache})
	if err != nil {
		return nil, err
	}
	if err := images.Push(ctx, h.Registry.Host, built); err != nil {
		return nil, err
	}
	return h, nil
}

// Node returns a node's runtime and network plugin: containerd namespace
// "podtrace-<node>", a bridge in the node's own network namespace with
// podCIDR, and directories under Dir/nodes/<node>.
func (h *Host) Node(node, podCIDR string) (*Runtime, *cni.Plugin, error) {
	dir := filepath.Join(h.cfg.Dir, "nodes", node)
	rt, err := New(Config{Client: h.Client, Namespace: "podtrace-" + node, Dir: filepath.Join(dir, "runtime"),
		Registry: h.Registry.Host, PauseImage: images.Pause})
	if err != nil {
		return nil, nil, err
	}
	if err := rt.RemoveStale(context.Background()); err != nil {
		rt.Close()
		return nil, nil, err
	}
	pl, err := cni.New(cni.Config{Node: node, PodCIDR: podCIDR, Dir: filepath.Join(dir, "cni"), NetNSPath: rt.NetNSPath, Fresh: true})
	if err != nil {
		rt.Close()
		return nil, nil, err
	}
	h.mu.Lock()
	h.runtimes, h.networks = append(h.runtimes, rt), append(h.networks, pl)
	h.mu.Unlock()
	return rt, pl, nil
}

// Runtime returns the runtime Node made for node, or nil.
func (h *Host) Runtime(node string) *Runtime {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, rt := range h.runtimes {
		if rt.cfg.Namespace == "podtrace-"+node {
			return rt
		}
	}
	return nil
}

// Network returns the CNI plugin Node made for node, or nil.
func (h *Host) Network(node string) *cni.Plugin {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, rt := range h.runtimes {
		if rt.cfg.Namespace == "podtrace-"+node {
			return h.networks[i]
		}
	}
	return nil
}

// Close removes every node's sandboxes and containers, the node network
// namespaces, and stops the registry and the containerd podtrace started.
func (h *Host) Close(ctx context.Context) error {
	h.mu.Lock()
	rts, nets := h.runtimes, h.networks
	h.runtimes, h.networks = nil, nil
	h.mu.Unlock()
	var errs []error
	for i, rt := range rts {
		for _, id := range rt.SandboxIDs() {
			errs = append(errs, nets[i].TearDown(ctx, network.Pod{SandboxID: id}))
		}
		errs = append(errs, rt.Cleanup(ctx))
		rt.Close()
		errs = append(errs, nets[i].Close())
	}
	if h.Registry != nil {
		errs = append(errs, h.Registry.Close())
	}
	if h.Client != nil {
		errs = append(errs, h.Client.Close())
	}
	if h.Daemon != nil {
		errs = append(errs, h.Daemon.Close())
	}
	if h.ownLog != nil {
		ctrdlog.L.Logger.SetOutput(io.Discard)
		_ = h.ownLog.Close()
	}
	return errors.Join(errs...)
}
