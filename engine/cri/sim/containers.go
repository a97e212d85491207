package sim

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/labels"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	utilexec "k8s.io/utils/exec"

	"github.com/podtrace/podtrace/engine/cri/sim/model"
	"github.com/podtrace/podtrace/engine/cri/sim/proc"
)

// CreateContainer creates a container from its image, command and
// arguments (which say what the simulated process does: see the simulated
// runtime's rules), with its log file at the path the kubelet gives.
func (r *Runtime) CreateContainer(ctx context.Context, sandboxID string, cfg *runtimeapi.ContainerConfig, sc *runtimeapi.PodSandboxConfig) (_ string, err error) {
	ctx, end := r.serverSpan(ctx, runtimeService, "CreateContainer")
	defer func() { end(err) }()
	if r.closed.Load() {
		return "", errShutDown
	}
	ref := imageRef(cfg.GetImage())
	mounts, err := r.mounts(sandboxID, cfg)
	if err != nil {
		return "", status.Error(codes.Unknown, err.Error())
	}
	r.mu.Lock()
	sb, ok := r.sandboxes[sandboxID]
	ready := ok && sb.ready
	r.mu.Unlock()
	if !ready {
		return "", status.Errorf(codes.NotFound, "failed to get sandbox %q: not found", sandboxID)
	}
	prog, err := model.ParseProgram(ref, cfg.GetCommand(), cfg.GetArgs(), cfg.GetAnnotations())
	if err != nil {
		return "", status.Errorf(codes.Unknown, "failed to create containerd container: %v", err)
	}
	md := sb.config.GetMetadata()
	key := fmt.Sprintf("%s/%s/%s/%d", md.GetNamespace(), md.GetName(), cfg.GetMetadata().GetName(), cfg.GetMetadata().GetAttempt())
	if err := r.timing.Take(ctx, r.timing.Create, "create/"+key); err != nil {
		return "", criError(err)
	}
	p, err := newProcess(key, prog, cfg, sc, mounts)
	if err != nil {
		return "", status.Errorf(codes.Unknown, "failed to create containerd container: %v", err)
	}
	p.host, p.net = sb.config.GetHostname(), podNetwork{r: r, sb: sb}
	id := r.timing.ID(r.cfg.Node, "container", key+"/"+md.GetUid())
	c := &container{id: id, sandbox: sandboxID, proc: p, status: &runtimeapi.ContainerStatus{Id: id, Metadata: cfg.GetMetadata(),
		State: runtimeapi.ContainerState_CONTAINER_CREATED, CreatedAt: r.timing.Clock.Now().UnixNano(),
		Image: cfg.GetImage(), ImageRef: cfg.GetImage().GetImage(), Labels: cfg.GetLabels(), Annotations: cfg.GetAnnotations(), Mounts: cfg.GetMounts()}}
	if res := cfg.GetLinux().GetResources(); res != nil {
		c.status.Resources = &runtimeapi.ContainerResources{Linux: res}
	}
	if dir, file := sc.GetLogDirectory(), cfg.GetLogPath(); dir != "" && file != "" {
		c.status.LogPath = filepath.Join(dir, file)
		c.log = openLog(c.status.LogPath)
	}
	r.mu.Lock()
	r.containers[id] = c
	r.changes++
	r.mu.Unlock()
	return id, nil
}

// mounts are the container's mounts as its process sees them, its
// resolv.conf among them; a bind mount's missing source is made first.
func (r *Runtime) mounts(sandboxID string, cfg *runtimeapi.ContainerConfig) ([]proc.Mount, error) {
	var mounts []proc.Mount
	cm := cfg.GetMounts()
	if m := r.resolvMount(sandboxID, cfg); m != nil {
		cm = append(cm[:len(cm):len(cm)], m)
	}
	for _, m := range cm {
		if err := r.makeMountSource(m.GetHostPath()); err != nil {
			return nil, err
		}
		mounts = append(mounts, proc.Mount{ContainerPath: m.GetContainerPath(), HostPath: m.GetHostPath(), ReadOnly: m.GetReadonly(),
			Type: r.mountType(m.GetHostPath()), Image: imageRef(m.GetImage())})
	}
	return mounts, nil
}

// StartContainer starts the container's process after the start latency.
func (r *Runtime) StartContainer(ctx context.Context, id string) (err error) {
	ctx, end := r.serverSpan(ctx, runtimeService, "StartContainer")
	defer func() { end(err) }()
	r.mu.Lock()
	c, ok := r.containers[id]
	r.mu.Unlock()
	if !ok || c.proc == nil {
		return status.Errorf(codes.NotFound, "container %q: not found", id)
	}
	if err := r.timing.Take(ctx, r.timing.Start, "start/"+c.proc.key); err != nil {
		return criError(err)
	}
	now := r.timing.Clock.Now()
	r.mu.Lock()
	if s := c.status.State; s != runtimeapi.ContainerState_CONTAINER_CREATED {
		r.mu.Unlock()
		return status.Errorf(codes.Unknown, "container %s is in %s state, not %s", id, s, runtimeapi.ContainerState_CONTAINER_CREATED)
	}
	c.status.State, c.status.StartedAt = runtimeapi.ContainerState_CONTAINER_RUNNING, now.UnixNano()
	r.changes++
	r.mu.Unlock()
	go r.run(c)
	return nil
}

// StopContainer sends SIGTERM: most programs exit 0 after the stop
// latency; shells and sleep (PID 1 without a handler) ignore it and are
// killed with SIGKILL (exit 137) when timeout seconds run out. A
// container that never started is marked exited.
func (r *Runtime) StopContainer(ctx context.Context, id string, timeout int64) error {
	r.mu.Lock()
	c, ok := r.containers[id]
	if !ok || c.proc == nil {
		r.mu.Unlock()
		return nil
	}
	select {
	case <-c.proc.stop:
	default:
		close(c.proc.stop)
	}
	if st := c.status; st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		if st.State == runtimeapi.ContainerState_CONTAINER_CREATED {
			st.State, st.FinishedAt = runtimeapi.ContainerState_CONTAINER_EXITED, r.timing.Clock.Now().UnixNano()
			r.changes++
		}
		r.mu.Unlock()
		return nil
	}
	r.mu.Unlock()
	code, grace := 0, time.Duration(timeout)*time.Second
	wait := r.timing.Scale(r.timing.Stop, "stop/"+c.proc.key)
	if c.proc.prog.IgnoresTerm || grace < wait {
		code, wait = 137, grace
	}
	if err := r.timing.Sleep(ctx, wait); err != nil {
		return criError(err)
	}
	r.exit(c, code)
	return nil
}

// RemoveContainer removes a container that does not run.
func (r *Runtime) RemoveContainer(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[id]
	if !ok {
		return nil
	}
	if c.status.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
		return status.Errorf(codes.Unknown, "container %s is running", id)
	}
	c.release()
	delete(r.containers, id)
	r.changes++
	return nil
}

// release closes what a removed container holds open: its log, and the
// input and terminal of a process that never started (a started one
// closes them as it ends).
func (c *container) release() {
	c.log.close()
	if c.proc != nil && c.status.StartedAt == 0 {
		c.proc.stdio.close()
	}
}

// ListContainers lists the containers that match filter.
func (r *Runtime) ListContainers(_ context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*runtimeapi.Container
	for _, c := range r.containers {
		st := c.status
		if filter != nil {
			if filter.GetId() != "" && filter.GetId() != c.id {
				continue
			}
			if filter.GetPodSandboxId() != "" && filter.GetPodSandboxId() != c.sandbox {
				continue
			}
			if s := filter.GetState(); s != nil && s.GetState() != st.State {
				continue
			}
			if !labels.SelectorFromSet(filter.GetLabelSelector()).Matches(labels.Set(st.Labels)) {
				continue
			}
		}
		out = append(out, &runtimeapi.Container{Id: c.id, PodSandboxId: c.sandbox, Metadata: st.Metadata,
			Image: st.Image, ImageRef: st.ImageRef, State: st.State, CreatedAt: st.CreatedAt,
			Labels: st.Labels, Annotations: st.Annotations})
	}
	return out, nil
}

// ContainerStatus reports the container's state and exit.
func (r *Runtime) ContainerStatus(_ context.Context, id string, _ bool) (*runtimeapi.ContainerStatusResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[id]
	if !ok {
		return nil, notFound("container", id)
	}
	return &runtimeapi.ContainerStatusResponse{Status: proto.Clone(c.status).(*runtimeapi.ContainerStatus)}, nil
}

// UpdateContainerResources applies an in-place resize: the container's
// status reports the new CPU and memory settings from then on, and its
// cgroup files show them.
func (r *Runtime) UpdateContainerResources(_ context.Context, id string, res *runtimeapi.ContainerResources) error {
	r.mu.Lock()
	c, ok := r.containers[id]
	if !ok {
		r.mu.Unlock()
		return notFound("container", id)
	}
	if res.GetLinux() == nil {
		r.mu.Unlock()
		return nil
	}
	if c.proc == nil {
		r.mu.Unlock()
		return status.Errorf(codes.NotFound, "container %q: not found", id)
	}
	c.status.Resources = &runtimeapi.ContainerResources{Linux: res.GetLinux()}
	r.changes++
	r.mu.Unlock()
	c.proc.fs.UpdateResources(res.GetLinux())
	return nil
}

// imageRef is the normalized reference of the image spec names (its
// user's, else the kubelet's resolved one), "" for none.
func imageRef(spec *runtimeapi.ImageSpec) string {
	image := spec.GetUserSpecifiedImage()
	if image == "" {
		image = spec.GetImage()
	}
	return model.Normalize(image)
}

// ExecSync runs cmd against the simulated container (exec probes and exec
// hooks); a non-zero exit is an ExitError, as CRI's remote client reports it.
func (r *Runtime) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, error) {
	stdout, stderr, code, err := r.execSync(ctx, id, cmd, timeout)
	if err != nil {
		return nil, nil, criError(err)
	}
	if code != 0 {
		return []byte(stdout), []byte(stderr), utilexec.CodeExitError{
			Err:  fmt.Errorf("command '%s' exited with %d: %s", strings.Join(cmd, " "), code, stderr),
			Code: code,
		}
	}
	return []byte(stdout), []byte(stderr), nil
}

// ReopenContainerLog reopens the container's log file (after rotation).
func (r *Runtime) ReopenContainerLog(_ context.Context, id string) error {
	if r.closed.Load() {
		return errShutDown
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[id]
	if !ok {
		return notFound("container", id)
	}
	c.log.close()
	c.log = openLog(c.status.LogPath)
	return nil
}

// CheckpointContainer is not simulated.
func (r *Runtime) CheckpointContainer(context.Context, *runtimeapi.CheckpointContainerRequest) error {
	return status.Errorf(codes.Unimplemented, "%s does not checkpoint containers", RuntimeName)
}

// GetContainerEvents is not served: the kubelet's generic PLEG lists
// containers instead.
func (r *Runtime) GetContainerEvents(context.Context, chan *runtimeapi.ContainerEventResponse, func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	return status.Errorf(codes.Unimplemented, "%s does not stream container events", RuntimeName)
}

// mountType is the file system the kubelet mounted at or above hostPath
// (Config.Mounts), or "" for the host directory's own.
func (r *Runtime) mountType(hostPath string) string {
	if r.cfg.Mounts == nil || hostPath == "" {
		return ""
	}
	return r.cfg.Mounts(hostPath)
}
