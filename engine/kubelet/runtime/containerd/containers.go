package containerd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/podtrace/podtrace/engine/kubelet/runtime"
)

type container struct {
	id, sandboxID string
	cfg           runtime.ContainerConfig
	ctr           client.Container
	logs          *logBook
	logPath       string

	mu     sync.Mutex
	status runtime.ContainerStatus
	task   client.Task
	io     *containerIO  // the started task's IO
	exited chan struct{} // closed when a started task has exited and been deleted
}

func (c *container) state() runtime.ContainerStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status
}

func (r *Runtime) container(id string) (*container, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[id]
	if !ok {
		return nil, fmt.Errorf("rpc error: code = NotFound desc = container %q: %w", id, runtime.ErrNotFound)
	}
	return c, nil
}

// CreateContainer creates a container from cfg in the sandbox's network,
// IPC and UTS namespaces, with cgroup limits from cfg.Resources.
func (r *Runtime) CreateContainer(ctx context.Context, sandboxID string, cfg runtime.ContainerConfig) (string, error) {
	ctx = r.ctx(ctx)
	r.mu.Lock()
	sb, ok := r.sandboxes[sandboxID]
	r.mu.Unlock()
	if !ok || sb.task == nil {
		return "", fmt.Errorf("rpc error: code = NotFound desc = failed to get sandbox %q: %w", sandboxID, runtime.ErrNotFound)
	}
	img, info, err := r.image(ctx, cfg.Image)
	if err != nil {
		return "", fmt.Errorf("rpc error: code = NotFound desc = %w", err)
	}
	imgSpec, desc := info.spec, info.img
	opts := []oci.SpecOpts{oci.WithImageConfig(img)}
	// Kubernetes' rule: command replaces the entrypoint and drops the
	// image's cmd; args alone replace the cmd.
	switch {
	case len(cfg.Command) > 0:
		opts = append(opts, oci.WithProcessArgs(append(append([]string{}, cfg.Command...), cfg.Args...)...))
	case len(cfg.Args) > 0:
		opts = append(opts, oci.WithProcessArgs(append(append([]string{}, imgSpec.Config.Entrypoint...), cfg.Args...)...))
	}
	if len(cfg.Env) > 0 {
		env := make([]string, 0, len(cfg.Env))
		for k, v := range cfg.Env {
			env = append(env, k+"="+v)
		}
		sort.Strings(env)
		opts = append(opts, oci.WithEnv(env))
	}
	if cfg.TTY {
		opts = append(opts, oci.WithTTY)
	}
	proc := fmt.Sprintf("/proc/%d/ns/", sb.pid)
	opts = append(opts,
		oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: sb.netns}),
		oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.IPCNamespace, Path: proc + "ipc"}),
		oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.UTSNamespace, Path: proc + "uts"}),
		oci.WithAnnotations(map[string]string{"io.kubernetes.cri.container-name": cfg.Name,
			"io.kubernetes.cri.sandbox-id": sandboxID}))
	if res := cfg.Resources; res != nil {
		if res.MemoryLimitBytes > 0 {
			opts = append(opts, oci.WithMemoryLimit(uint64(res.MemoryLimitBytes)))
		}
		if res.CPUShares > 0 {
			opts = append(opts, oci.WithCPUShares(uint64(res.CPUShares)))
		}
		if res.CPUQuota > 0 && res.CPUPeriod > 0 {
			opts = append(opts, oci.WithCPUCFS(res.CPUQuota, uint64(res.CPUPeriod)))
		}
	}
	id := newID()
	c := &container{id: id, sandboxID: sandboxID, cfg: cfg, logPath: filepath.Join(r.cfg.Dir, "logs", id+".log")}
	if c.logs, err = newLogBook(c.logPath, r.clock); err != nil {
		return "", err
	}
	c.ctr, err = r.c.NewContainer(ctx, id,
		client.WithImage(img),
		client.WithSnapshotter(r.cfg.Snapshotter),
		client.WithNewSnapshot(id, img),
		client.WithRuntime(runcRuntime, nil),
		client.WithContainerLabels(map[string]string{LabelKind: "container", LabelSandbox: sandboxID,
			LabelPodName: sb.cfg.Name, LabelPodNamespace: sb.cfg.Namespace, LabelPodUID: sb.cfg.UID, LabelContainer: cfg.Name}),
		client.WithNewSpec(opts...))
	if err != nil {
		c.logs.close()
		_ = os.Remove(c.logPath)
		return "", fmt.Errorf("rpc error: code = Unknown desc = failed to create containerd container: %w", err)
	}
	c.status = runtime.ContainerStatus{ID: id, Name: cfg.Name, State: runtime.StateCreated, CreatedAt: r.clock.Now(),
		Image: cfg.Image, ImageID: desc.RepoDigest}
	r.mu.Lock()
	r.containers[id] = c
	r.mu.Unlock()
	r.emit(runtime.ContainerEvent{ContainerID: id, SandboxID: sandboxID, State: runtime.StateCreated, Time: c.status.CreatedAt})
	return id, nil
}

// StartContainer creates the container's task (runc create) with its output
// going to the container's log and attached clients, a stdin pipe and a
// terminal when the spec asks for them, and starts it.
func (r *Runtime) StartContainer(ctx context.Context, id string) error {
	ctx = r.ctx(ctx)
	c, err := r.container(id)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.status.State != runtime.StateCreated {
		return fmt.Errorf("rpc error: code = Unknown desc = container %s is in %s state, not %s", id, c.status.State, runtime.StateCreated)
	}
	pio := newContainerIO(c.cfg, c.logs)
	started := false
	defer func() {
		if !started {
			pio.end() // no task reads the stdin pipe
		}
	}()
	task, err := c.ctr.NewTask(ctx, pio.creator(filepath.Join(r.cfg.Dir, "fifo")))
	if err != nil {
		return r.startFailed(c, fmt.Errorf("rpc error: code = Unknown desc = failed to create containerd task: %w", err))
	}
	exitCh, err := task.Wait(r.bg)
	if err != nil {
		_, _ = task.Delete(r.bg, client.WithProcessKill)
		return r.startFailed(c, fmt.Errorf("rpc error: code = Unknown desc = failed to wait for task: %w", err))
	}
	if err := task.Start(ctx); err != nil {
		_, _ = task.Delete(r.bg, client.WithProcessKill)
		return r.startFailed(c, fmt.Errorf("rpc error: code = Unknown desc = failed to start containerd task %q: %w", id, err))
	}
	started = true
	c.task, c.io, c.exited = task, pio, make(chan struct{})
	c.status.State, c.status.StartedAt = runtime.StateRunning, r.clock.Now()
	go r.watch(c, task, exitCh, pio)
	r.emit(runtime.ContainerEvent{ContainerID: id, SandboxID: c.sandboxID, State: runtime.StateRunning, Time: c.status.StartedAt})
	return nil
}

// startFailed marks a container whose task could not start as exited
// (the kubelet reports StartError) and returns err. c.mu is held.
func (r *Runtime) startFailed(c *container, err error) error {
	now := r.clock.Now()
	c.status.State, c.status.ExitCode, c.status.FinishedAt = runtime.StateExited, 128, now
	c.status.Reason, c.status.Message = "StartError", err.Error()
	r.emit(runtime.ContainerEvent{ContainerID: c.id, SandboxID: c.sandboxID, State: runtime.StateExited, Time: now})
	return err
}

// watch records the exit of a started task, deletes the task (after its
// output is drained) and reports the change.
func (r *Runtime) watch(c *container, task client.Task, exitCh <-chan client.ExitStatus, pio *containerIO) {
	st, ok := <-exitCh
	code, at := uint32(255), r.clock.Now()
	if ok {
		if ec, _, err := st.Result(); err == nil {
			code = ec
		}
	}
	_, _ = task.Delete(r.bg)
	pio.end()
	c.mu.Lock()
	c.status.State, c.status.ExitCode, c.status.FinishedAt = runtime.StateExited, int(code), at
	c.status.Reason = "Completed"
	if code != 0 {
		c.status.Reason = "Error"
	}
	if code == 137 && r.oomKilled(c) {
		c.status.Reason = "OOMKilled"
	}
	c.task, c.io = nil, nil
	close(c.exited)
	c.mu.Unlock()
	r.emit(runtime.ContainerEvent{ContainerID: c.id, SandboxID: c.sandboxID, State: runtime.StateExited, Time: at})
}

// oomKilled reports whether the memory cgroup of c saw an OOM kill.
func (r *Runtime) oomKilled(c *container) bool {
	if c.cfg.Resources == nil || c.cfg.Resources.MemoryLimitBytes == 0 {
		return false
	}
	b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/memory", r.cfg.Namespace, c.id, "memory.failcnt"))
	return err == nil && len(b) > 0 && b[0] != '0'
}

// StopContainer sends SIGTERM and, if the container is still running after
// timeout, SIGKILL; it returns once the container has exited.
func (r *Runtime) StopContainer(ctx context.Context, id string, timeout time.Duration) error {
	ctx = r.ctx(ctx)
	c, err := r.container(id)
	if err != nil {
		return err
	}
	c.mu.Lock()
	task, exited := c.task, c.exited
	c.mu.Unlock()
	if task == nil {
		return nil // never started or already exited
	}
	if timeout > 0 {
		if err := task.Kill(ctx, syscall.SIGTERM); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("rpc error: code = Unknown desc = failed to stop container %q: %w", id, err)
		}
		t := time.NewTimer(timeout)
		defer t.Stop()
		select {
		case <-exited:
			return nil
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := task.Kill(ctx, syscall.SIGKILL, client.WithKillAll); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("rpc error: code = Unknown desc = failed to kill container %q: %w", id, err)
	}
	select {
	case <-exited:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RemoveContainer kills the container if it runs and removes it with its
// snapshot and log.
func (r *Runtime) RemoveContainer(ctx context.Context, id string) error {
	ctx = r.ctx(ctx)
	c, err := r.container(id)
	if err != nil {
		return err
	}
	if err := r.StopContainer(ctx, id, 0); err != nil {
		return err
	}
	if err := c.ctr.Delete(ctx, client.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("rpc error: code = Unknown desc = failed to delete containerd container %q: %w", id, err)
	}
	c.logs.close()
	_ = os.Remove(c.logPath)
	r.mu.Lock()
	delete(r.containers, id)
	r.mu.Unlock()
	return nil
}

// ContainerStatus returns the container's state.
func (r *Runtime) ContainerStatus(_ context.Context, id string) (runtime.ContainerStatus, error) {
	c, err := r.container(id)
	if err != nil {
		return runtime.ContainerStatus{}, err
	}
	return c.state(), nil
}

// ContainerLogs returns the lines the container wrote so far.
func (r *Runtime) ContainerLogs(_ context.Context, id string) ([]runtime.LogLine, error) {
	c, err := r.container(id)
	if err != nil {
		return nil, err
	}
	return c.logs.snapshot(), nil
}

// ExecSync runs cmd in the running container (task exec, the container's
// process settings) and returns its output and exit code.
func (r *Runtime) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (runtime.ExecResult, error) {
	ctx = r.ctx(ctx)
	task, pspec, err := r.execSpec(ctx, id, cmd, false)
	if err != nil {
		return runtime.ExecResult{}, err
	}
	var stdout, stderr syncBuffer
	execID := "exec-" + newID()[:16]
	p, err := task.Exec(ctx, execID, pspec, cio.NewCreator(cio.WithStreams(nil, &stdout, &stderr), cio.WithFIFODir(filepath.Join(r.cfg.Dir, "fifo"))))
	if err != nil {
		return runtime.ExecResult{}, fmt.Errorf("rpc error: code = Unknown desc = failed to exec in container: %w", err)
	}
	defer func() { _, _ = p.Delete(context.WithoutCancel(ctx), client.WithProcessKill) }()
	ch, err := p.Wait(ctx)
	if err != nil {
		return runtime.ExecResult{}, fmt.Errorf("rpc error: code = Unknown desc = failed to exec in container: %w", err)
	}
	if err := p.Start(ctx); err != nil {
		return runtime.ExecResult{}, fmt.Errorf("rpc error: code = Unknown desc = failed to exec in container: failed to start exec %q: %w", execID, err)
	}
	if timeout <= 0 {
		timeout = time.Minute
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case st := <-ch:
		code, _, err := st.Result()
		if err != nil {
			return runtime.ExecResult{}, fmt.Errorf("rpc error: code = Unknown desc = failed to exec in container: %w", err)
		}
		p.IO().Wait() // output fully copied
		return runtime.ExecResult{Stdout: stdout.String(), Stderr: stderr.String(), ExitCode: int(code)}, nil
	case <-t.C:
		_ = p.Kill(ctx, syscall.SIGKILL)
		return runtime.ExecResult{}, fmt.Errorf("command %q timed out", cmd)
	case <-ctx.Done():
		_ = p.Kill(context.WithoutCancel(ctx), syscall.SIGKILL)
		return runtime.ExecResult{}, ctx.Err()
	}
}
