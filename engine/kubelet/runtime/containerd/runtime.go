// Package containerd is the kubelet's runtime for real containers: it
// implements runtime.Runtime on containerd (v2 Go client) and runc. A
// sandbox is a pause container in a network namespace podtrace creates;
// containers join that namespace and the pause container's IPC and UTS
// namespaces; images are pulled with containerd's own resolver and
// unpacker from podtrace's loopback registry; output is kept for pods/log.
// Several nodes may share one containerd, each in a containerd namespace
// of its own.
package containerd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/remotes"
	"github.com/containerd/containerd/v2/core/remotes/docker"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/errdefs"
	"k8s.io/utils/clock"

	"github.com/podtrace/podtrace/engine/kubelet/network/cni/netns"
	"github.com/podtrace/podtrace/engine/kubelet/runtime"
)

// RuntimeName prefixes container IDs in pod status ("containerd://<id>").
const RuntimeName = "containerd"

// Config configures one node's runtime.
type Config struct {
	// Client is connected to containerd; it may be shared between nodes.
	Client *client.Client
	// Namespace is the node's containerd namespace, e.g. "podtrace-node-1".
	Namespace string
	// Dir holds the node's sandbox network namespaces, FIFOs and container
	// logs (required).
	Dir string
	// Registry is the loopback registry ("127.0.0.1:PORT") every image
	// reference resolves to, whatever its domain: image
	// "podtrace.dev/demo:1.0" is repository "podtrace.dev/demo" there.
	Registry string
	// PauseImage is the sandbox image (normalized reference).
	PauseImage string
	// Snapshotter is "overlayfs" when empty.
	Snapshotter string
	// Clock stamps container times; the real clock when nil.
	Clock clock.PassiveClock
}

// Runtime is one node's containerd runtime.
type Runtime struct {
	cfg      Config
	c        *client.Client
	resolver remotes.Resolver
	clock    clock.PassiveClock
	// bg outlives requests: task waits and output copies use it.
	bg     context.Context
	cancel context.CancelFunc

	mu         sync.Mutex
	sandboxes  map[string]*sandbox
	containers map[string]*container
	subs       []chan runtime.ContainerEvent
	imageCache map[string]imageInfo
}

var _ runtime.Runtime = (*Runtime)(nil)

// New returns a node's runtime; Close releases its background work.
func New(cfg Config) (*Runtime, error) {
	if cfg.Client == nil || cfg.Namespace == "" || cfg.Dir == "" || cfg.Registry == "" || cfg.PauseImage == "" {
		return nil, errors.New("containerd runtime: Client, Namespace, Dir, Registry and PauseImage are required")
	}
	if cfg.Snapshotter == "" {
		cfg.Snapshotter = "overlayfs"
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	for _, d := range []string{"netns", "fifo", "logs"} {
		if err := os.MkdirAll(filepath.Join(cfg.Dir, d), 0o755); err != nil {
			return nil, fmt.Errorf("containerd runtime: %w", err)
		}
	}
	r := &Runtime{cfg: cfg, c: cfg.Client, clock: cfg.Clock, resolver: Resolver(cfg.Registry),
		sandboxes: map[string]*sandbox{}, containers: map[string]*container{}, imageCache: map[string]imageInfo{}}
	r.bg, r.cancel = context.WithCancel(namespaces.WithNamespace(context.Background(), cfg.Namespace))
	return r, nil
}

// Resolver returns containerd's docker resolver with every registry host
// mapped to the loopback registry at host over plain HTTP: repository
// "<domain>/<path>" there. Nothing is ever fetched from another machine.
func Resolver(host string) remotes.Resolver {
	hc := &http.Client{Transport: docker.DefaultHTTPTransport(nil), Timeout: 5 * time.Minute}
	return docker.NewResolver(docker.ResolverOptions{Hosts: func(domain string) ([]docker.RegistryHost, error) {
		return []docker.RegistryHost{{Client: hc, Host: host, Scheme: "http", Path: "/v2/" + domain,
			Capabilities: docker.HostCapabilityPull | docker.HostCapabilityResolve}}, nil
	}})
}

// ctx returns a request context in the node's containerd namespace.
func (r *Runtime) ctx(ctx context.Context) context.Context {
	return namespaces.WithNamespace(ctx, r.cfg.Namespace)
}

// Namespace returns the node's containerd namespace.
func (r *Runtime) Namespace() string { return r.cfg.Namespace }

// Client returns the containerd client.
func (r *Runtime) Client() *client.Client { return r.c }

func newID() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Events returns container state changes until ctx is done.
func (r *Runtime) Events(ctx context.Context) <-chan runtime.ContainerEvent {
	ch := make(chan runtime.ContainerEvent, 256)
	r.mu.Lock()
	r.subs = append(r.subs, ch)
	r.mu.Unlock()
	out := make(chan runtime.ContainerEvent)
	go func() {
		defer close(out)
		defer func() {
			r.mu.Lock()
			for i, s := range r.subs {
				if s == ch {
					r.subs = append(r.subs[:i], r.subs[i+1:]...)
					break
				}
			}
			r.mu.Unlock()
		}()
		for {
			select {
			case e := <-ch:
				select {
				case out <- e:
				case <-ctx.Done():
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

func (r *Runtime) emit(e runtime.ContainerEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.subs {
		select {
		case s <- e:
		default: // a stalled reader loses events; the kubelet resyncs
		}
	}
}

// Close stops the runtime's background work. Containers are left as they
// are; Cleanup removes them.
func (r *Runtime) Close() error {
	r.cancel()
	return nil
}

// RemoveStale removes what an earlier run left in the node's containerd
// namespace and directory (after a crash or kill): every container with
// its task and snapshot, and every pinned network namespace.
func (r *Runtime) RemoveStale(ctx context.Context) error {
	ctx = r.ctx(ctx)
	ctrs, err := r.c.Containers(ctx)
	if err != nil {
		return fmt.Errorf("list stale containers: %w", err)
	}
	var errs []error
	for _, c := range ctrs {
		if t, err := c.Task(ctx, nil); err == nil {
			errs = append(errs, killTask(ctx, t))
		}
		if err := c.Delete(ctx, client.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete stale container %s: %w", c.ID(), err))
		}
	}
	ents, _ := os.ReadDir(filepath.Join(r.cfg.Dir, "netns"))
	for _, e := range ents {
		errs = append(errs, netns.Remove(filepath.Join(r.cfg.Dir, "netns", e.Name())))
	}
	return errors.Join(errs...)
}

// SandboxIDs returns the IDs of the node's sandboxes.
func (r *Runtime) SandboxIDs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := make([]string, 0, len(r.sandboxes))
	for id := range r.sandboxes {
		ids = append(ids, id)
	}
	return ids
}

// NetNSCount returns how many pod network namespaces of the node are
// pinned in its directory.
func (r *Runtime) NetNSCount() (int, error) {
	ents, err := os.ReadDir(filepath.Join(r.cfg.Dir, "netns"))
	return len(ents), err
}

// Cleanup stops and removes every sandbox and container of the node.
func (r *Runtime) Cleanup(ctx context.Context) error {
	var errs []error
	for _, id := range r.SandboxIDs() {
		if err := r.RemovePodSandbox(ctx, id); err != nil {
			errs = append(errs, err)
		}
	}
	// The namespace's cgroup parents (/sys/fs/cgroup/*/<namespace>) are
	// left by runc; remove them when empty.
	dirs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", r.cfg.Namespace))
	for _, d := range dirs {
		_ = syscall.Rmdir(d)
	}
	return errors.Join(errs...)
}
