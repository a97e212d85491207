package containerd

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/podtrace/podtrace/engine/kubelet/network/cni/netns"
	"github.com/podtrace/podtrace/engine/kubelet/runtime"
)

// runcRuntime is the shim every container runs under.
const runcRuntime = "io.containerd.runc.v2"

// Labels podtrace puts on its containerd containers.
const (
	LabelKind         = "io.podtrace.kind" // "sandbox" or "container"
	LabelSandbox      = "io.podtrace.sandbox-id"
	LabelPodName      = "io.kubernetes.pod.name"
	LabelPodNamespace = "io.kubernetes.pod.namespace"
	LabelPodUID       = "io.kubernetes.pod.uid"
	LabelContainer    = "io.kubernetes.container.name"
)

type sandbox struct {
	id    string
	cfg   runtime.SandboxConfig
	netns string
	ctr   client.Container
	task  client.Task
	pid   uint32
}

// RunPodSandbox creates a network namespace and starts the pause container
// in it (pulling the pause image first if needed).
func (r *Runtime) RunPodSandbox(ctx context.Context, cfg runtime.SandboxConfig) (_ string, err error) {
	ctx = r.ctx(ctx)
	img, err := r.ensureImage(ctx, r.cfg.PauseImage)
	if err != nil {
		return "", err
	}
	id := newID()
	sb := &sandbox{id: id, cfg: cfg}
	defer func() {
		if err != nil {
			r.destroySandbox(context.WithoutCancel(ctx), sb)
		}
	}()
	if sb.netns, err = netns.Create(filepath.Join(r.cfg.Dir, "netns", id[:16])); err != nil {
		return "", fmt.Errorf("failed to create network namespace for sandbox %q: %w", id, err)
	}
	sb.ctr, err = r.c.NewContainer(ctx, id,
		client.WithImage(img),
		client.WithSnapshotter(r.cfg.Snapshotter),
		client.WithNewSnapshot(id, img),
		client.WithRuntime(runcRuntime, nil),
		client.WithContainerLabels(map[string]string{LabelKind: "sandbox", LabelPodName: cfg.Name,
			LabelPodNamespace: cfg.Namespace, LabelPodUID: cfg.UID}),
		client.WithNewSpec(oci.WithImageConfig(img), oci.WithHostname(cfg.Hostname),
			oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: sb.netns}),
			oci.WithAnnotations(map[string]string{"io.kubernetes.cri.sandbox-name": cfg.Name,
				"io.kubernetes.cri.sandbox-namespace": cfg.Namespace, "io.kubernetes.cri.sandbox-uid": cfg.UID})))
	if err != nil {
		return "", fmt.Errorf("failed to create containerd container: %w", err)
	}
	if sb.task, err = sb.ctr.NewTask(ctx, cio.NullIO); err != nil {
		return "", fmt.Errorf("failed to create containerd task: %w", err)
	}
	if err = sb.task.Start(ctx); err != nil {
		return "", fmt.Errorf("failed to start sandbox %q: %w", id, err)
	}
	sb.pid = sb.task.Pid()
	r.mu.Lock()
	r.sandboxes[id] = sb
	r.mu.Unlock()
	return id, nil
}

// ensureImage returns ref, pulling it when it is not present.
func (r *Runtime) ensureImage(ctx context.Context, ref string) (client.Image, error) {
	img, err := r.c.GetImage(ctx, ref)
	if err == nil {
		if _, ok, _ := r.unpackedInfo(ctx, img); ok {
			return img, nil
		}
	}
	if _, err := r.PullImage(ctx, ref, nil); err != nil {
		return nil, err
	}
	return r.c.GetImage(ctx, ref)
}

// NetNSPath returns the network namespace of a sandbox, for CNI.
func (r *Runtime) NetNSPath(sandboxID string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sb, ok := r.sandboxes[sandboxID]
	if !ok {
		return "", fmt.Errorf("sandbox %q: %w", sandboxID, runtime.ErrNotFound)
	}
	return sb.netns, nil
}

// StopPodSandbox kills every container of the sandbox, then the pause container.
func (r *Runtime) StopPodSandbox(ctx context.Context, id string) error {
	ctx = r.ctx(ctx)
	r.mu.Lock()
	sb, ok := r.sandboxes[id]
	var ctrs []string
	for cid, c := range r.containers {
		if c.sandboxID == id {
			ctrs = append(ctrs, cid)
		}
	}
	r.mu.Unlock()
	if !ok {
		return fmt.Errorf("rpc error: code = NotFound desc = sandbox %q: %w", id, runtime.ErrNotFound)
	}
	var errs []error
	for _, cid := range ctrs {
		if err := r.StopContainer(ctx, cid, 0); err != nil && !errors.Is(err, runtime.ErrNotFound) {
			errs = append(errs, err)
		}
	}
	if sb.task != nil {
		errs = append(errs, killTask(ctx, sb.task))
		sb.task = nil
	}
	return errors.Join(errs...)
}

// killTask kills a task with SIGKILL, waits for it and deletes it.
func killTask(ctx context.Context, t client.Task) error {
	ch, err := t.Wait(ctx)
	if err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("wait task %s: %w", t.ID(), err)
	}
	if err := t.Kill(ctx, syscall.SIGKILL, client.WithKillAll); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("kill task %s: %w", t.ID(), err)
	}
	if ch != nil {
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
		case <-ctx.Done():
		}
	}
	if _, err := t.Delete(ctx, client.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("delete task %s: %w", t.ID(), err)
	}
	return nil
}

// RemovePodSandbox stops the sandbox if needed and removes its containers,
// the pause container, their snapshots and the network namespace.
func (r *Runtime) RemovePodSandbox(ctx context.Context, id string) error {
	ctx = r.ctx(ctx)
	r.mu.Lock()
	sb, ok := r.sandboxes[id]
	var ctrs []string
	for cid, c := range r.containers {
		if c.sandboxID == id {
			ctrs = append(ctrs, cid)
		}
	}
	r.mu.Unlock()
	if !ok {
		return nil // already removed
	}
	var errs []error
	for _, cid := range ctrs {
		if err := r.RemoveContainer(ctx, cid); err != nil && !errors.Is(err, runtime.ErrNotFound) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, r.destroySandbox(ctx, sb))
	r.mu.Lock()
	delete(r.sandboxes, id)
	r.mu.Unlock()
	return errors.Join(errs...)
}

func (r *Runtime) destroySandbox(ctx context.Context, sb *sandbox) error {
	var errs []error
	if sb.task != nil {
		errs = append(errs, killTask(ctx, sb.task))
		sb.task = nil
	}
	if sb.ctr != nil {
		if err := sb.ctr.Delete(ctx, client.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete sandbox container %s: %w", sb.id, err))
		}
		sb.ctr = nil
	}
	if sb.netns != "" {
		errs = append(errs, netns.Remove(sb.netns))
	}
	return errors.Join(errs...)
}
