package containerd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	ctrdlog "github.com/containerd/log"

	"github.com/podtrace/podtrace/engine/registry"
	"github.com/podtrace/podtrace/images"
)

// PluginName is the CNI plugin podtrace chains in front of each node's
// network (cmd/podtrace-cni).
const PluginName = "podtrace-cni"

// HostConfig configures StartHost.
type HostConfig struct {
	// Dir holds each node's containerd, CNI configuration and registry
	// hosts, the loopback registry's blobs and the image build cache.
	Dir string
	// Bin is the containerd binary; from PATH when empty.
	Bin string
	// Plugin is podtrace-cni; found beside the running executable or on
	// PATH when empty.
	Plugin string
	// PluginDirs hold the standard CNI plugins (bridge, host-local,
	// loopback); DefaultPluginDirs when empty.
	PluginDirs []string
	// Mirror, when set, is a registry URL every pull goes to instead of
	// the image's own registry (--registry-mirror); else images come from
	// their own registries.
	Mirror string
	// E2EImages builds the conformance suite's images too (agnhost and
	// busybox, images.BuildE2E: minutes the first time) and serves them
	// under their registry.k8s.io names, so the suite runs with no internet.
	E2EImages bool
	// BuildCache keeps compiled image binaries across runs; Dir/build when empty.
	BuildCache string
	// Log receives the registry's request log and the containerd client
	// library's log; Dir/client.log when nil.
	Log io.Writer
}

// DefaultPluginDirs are where Debian's containernetworking-plugins and the
// upstream release archives put the standard CNI plugins.
var DefaultPluginDirs = []string{"/usr/lib/cni", "/opt/cni/bin"}

// Host is what the real-container nodes of one cluster share: the loopback
// registry with podtrace's own images (podtrace.dev/…), and the socket
// podtrace-cni reports on. Each node runs its own containerd (StartNode),
// as each node of a real cluster does: its CRI plugin owns every pod in
// its "k8s.io" namespace, so two kubelets cannot share one.
type Host struct {
	cfg      HostConfig
	Registry *registry.Registry
	plugins  *pluginServer

	ownLog *os.File
	mu     sync.Mutex
	nodes  []*Node
}

// StartHost checks for what real containers need, starts the loopback
// registry, builds podtrace's images into it and listens for podtrace-cni.
func StartHost(ctx context.Context, cfg HostConfig) (_ *Host, err error) {
	if cfg.Dir == "" {
		return nil, errors.New("containerd host: Dir is required")
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("--runtime containerd needs root (containerd, runc and CNI create namespaces and cgroups)")
	}
	if cfg.Plugin, err = findPlugin(cfg.Plugin); err != nil {
		return nil, err
	}
	if len(cfg.PluginDirs) == 0 {
		cfg.PluginDirs = DefaultPluginDirs
	}
	if cfg.BuildCache == "" {
		cfg.BuildCache = filepath.Join(cfg.Dir, "build")
	}
	for _, d := range []string{cfg.Dir, cfg.BuildCache} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("containerd host: %w", err)
		}
	}
	h := &Host{}
	if cfg.Log == nil {
		if h.ownLog, err = os.OpenFile(filepath.Join(cfg.Dir, "client.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			return nil, fmt.Errorf("containerd host: %w", err)
		}
		cfg.Log = h.ownLog
	}
	// containerd's client libraries log through logrus' standard logger,
	// to stderr by default: the terminal belongs to the UI.
	ctrdlog.L.Logger.SetOutput(cfg.Log)
	h.cfg = cfg
	defer func() {
		if err != nil {
			_ = h.Close(context.WithoutCancel(ctx))
		}
	}()
	if h.plugins, err = listenPlugins(filepath.Join(cfg.Dir, "cni.sock")); err != nil {
		return nil, err
	}
	if h.Registry, err = registry.Start(ctx, registry.Config{BlobDir: filepath.Join(cfg.Dir, "registry"), Log: cfg.Log}); err != nil {
		return nil, err
	}
	built, err := images.Build(ctx, images.Config{CacheDir: cfg.BuildCache})
	if err != nil {
		return nil, err
	}
	if cfg.E2EImages {
		e2e, err := images.BuildE2E(ctx, images.Config{CacheDir: cfg.BuildCache})
		if err != nil {
			return nil, err
		}
		built = append(built, e2e...)
	}
	if err := images.Push(ctx, h.Registry.Host, built); err != nil {
		return nil, err
	}
	return h, nil
}

// Close stops every node (removing its pods) and the registry.
func (h *Host) Close(ctx context.Context) error {
	h.mu.Lock()
	nodes := h.nodes
	h.nodes = nil
	h.mu.Unlock()
	errs := make([]error, len(nodes), len(nodes)+3)
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() { errs[i] = n.Close(ctx) })
	}
	wg.Wait()
	errs = append(errs, removeHostPortChains())
	if h.plugins != nil {
		errs = append(errs, h.plugins.close())
	}
	if h.Registry != nil {
		errs = append(errs, h.Registry.Close())
	}
	if h.ownLog != nil {
		ctrdlog.L.Logger.SetOutput(io.Discard)
		_ = h.ownLog.Close()
	}
	return errors.Join(errs...)
}

// findPlugin returns path, or podtrace-cni beside the running executable,
// or on PATH.
func findPlugin(path string) (string, error) {
	if path != "" {
		return filepath.Abs(path)
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), PluginName)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath(PluginName); err == nil {
		return filepath.Abs(p)
	}
	return "", fmt.Errorf("--runtime containerd needs the %s CNI plugin beside podtrace or on PATH (go build ./cmd/%s)", PluginName, PluginName)
}

// listenUnix listens on a unix socket at path, or at a shorter path under
// /run when path is too long for one.
func listenUnix(path string) (net.Listener, error) {
	path = socketPath(path)
	if err := os.MkdirAll(filepath.Dir(path), 0o711); err != nil {
		return nil, err
	}
	_ = os.Remove(path)
	return net.Listen("unix", path)
}

// Node returns the running node named name, or nil.
func (h *Host) Node(name string) *Node {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, n := range h.nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}
