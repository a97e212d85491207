package sim

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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
	// The process's environment: HOSTNAME, as containerd sets it, then the
	// kubelet's.
	env := map[string]string{"HOSTNAME": sc.GetHostname()}
	for _, kv := range cfg.GetEnvs() {
		env[kv.GetKey()] = string(kv.GetValue())
	}
	ref := imageRef(cfg.GetImage())
	sec := cfg.GetLinux().GetSecurityContext()
	var mounts []proc.Mount
	cm := cfg.GetMounts()
	if m := r.resolvMount(sandboxID, cfg); m != nil {
		cm = append(cm[:len(cm):len(cm)], m)
	}
	for _, m := range cm {
		if err := r.makeMountSource(m.GetHostPath()); err != nil {
			return "", status.Error(codes.Unknown, err.Error())
		}
		mounts = append(mounts, proc.Mount{ContainerPath: m.GetContainerPath(), HostPath: m.GetHostPath(), ReadOnly: m.GetReadonly(),
			Type: r.mountType(m.GetHostPath()), Image: imageRef(m.GetImage())})
	}
	var network proc.Network
	r.mu.Lock()
	if sb, ok := r.sandboxes[sandboxID]; ok {
		network = podNetwork{r: r, sb: sb}
	}
	r.mu.Unlock()
	id, err := r.rt.CreateContainer(ctx, sandboxID, model.ContainerConfig{Net: network, Name: cfg.GetMetadata().GetName(),
		Attempt: int(cfg.GetMetadata().GetAttempt()), Image: ref, Command: cfg.GetCommand(), Args: cfg.GetArgs(),
		Env: env, Mounts: mounts, Security: proc.Security{Privileged: sec.GetPrivileged(), NoNewPrivs: sec.GetNoNewPrivs(),
			AddCaps: sec.GetCapabilities().GetAddCapabilities(), DropCaps: sec.GetCapabilities().GetDropCapabilities()},
		UID: sec.GetRunAsUser().GetValue(), GID: sec.GetRunAsGroup().GetValue(), ReadOnlyRoot: sec.GetReadonlyRootfs(), WorkingDir: cfg.GetWorkingDir(), Annotations: cfg.GetAnnotations(), Stdin: cfg.GetStdin(), StdinOnce: cfg.GetStdinOnce(), TTY: cfg.GetTty(),
		Resources: cfg.GetLinux().GetResources(), Sysctls: sc.GetLinux().GetSysctls()})
	if err != nil {
		return "", criError(err)
	}
	c := &container{id: id, sandbox: sandboxID, config: cfg, created: time.Now(), imageRef: cfg.GetImage().GetImage(),
		resources: cfg.GetLinux().GetResources()}
	if dir, p := sc.GetLogDirectory(), cfg.GetLogPath(); dir != "" && p != "" {
		c.logPath = filepath.Join(dir, p)
		c.log = openLog(c.logPath)
	}
	r.mu.Lock()
	r.containers[id] = c
	r.changes++
	r.mu.Unlock()
	return id, nil
}

// StartContainer starts the container's process.
func (r *Runtime) StartContainer(ctx context.Context, id string) (err error) {
	ctx, end := r.serverSpan(ctx, runtimeService, "StartContainer")
	defer func() { end(err) }()
	return criError(r.rt.StartContainer(ctx, id))
}

// StopContainer stops the process: the stop signal, then a kill after
// timeout seconds.
func (r *Runtime) StopContainer(ctx context.Context, id string, timeout int64) error {
	return criError(r.rt.StopContainer(ctx, id, time.Duration(timeout)*time.Second))
}

// RemoveContainer removes a stopped container.
func (r *Runtime) RemoveContainer(ctx context.Context, id string) error {
	if err := r.rt.RemoveContainer(ctx, id); err != nil {
		return criError(err)
	}
	r.mu.Lock()
	if c, ok := r.containers[id]; ok {
		c.log.close()
		delete(r.containers, id)
		r.changes++
	}
	r.mu.Unlock()
	return nil
}

// ListContainers lists the containers that match filter.
func (r *Runtime) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	r.mu.Lock()
	cs := make([]*container, 0, len(r.containers))
	for _, c := range r.containers {
		cs = append(cs, c)
	}
	r.mu.Unlock()
	var out []*runtimeapi.Container
	for _, c := range cs {
		st, err := r.status(ctx, c)
		if err != nil {
			continue
		}
		state := st.GetState()
		if filter != nil {
			if filter.GetId() != "" && filter.GetId() != c.id {
				continue
			}
			if filter.GetPodSandboxId() != "" && filter.GetPodSandboxId() != c.sandbox {
				continue
			}
			if s := filter.GetState(); s != nil && s.GetState() != state {
				continue
			}
			if !labels.SelectorFromSet(filter.GetLabelSelector()).Matches(labels.Set(c.config.GetLabels())) {
				continue
			}
		}
		out = append(out, &runtimeapi.Container{Id: c.id, PodSandboxId: c.sandbox, Metadata: c.config.GetMetadata(),
			Image: c.config.GetImage(), ImageRef: c.imageRef, State: state, CreatedAt: c.created.UnixNano(),
			Labels: c.config.GetLabels(), Annotations: c.config.GetAnnotations()})
	}
	return out, nil
}

// ContainerStatus reports the container's state and exit.
func (r *Runtime) ContainerStatus(ctx context.Context, id string, _ bool) (*runtimeapi.ContainerStatusResponse, error) {
	r.mu.Lock()
	c, ok := r.containers[id]
	r.mu.Unlock()
	if !ok {
		return nil, notFound("container", id)
	}
	st, err := r.status(ctx, c)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ContainerStatusResponse{Status: st}, nil
}

// status is c's CRI status: the simulated process's, or for a container
// restored from before a restart, the exit it was given then.
func (r *Runtime) status(ctx context.Context, c *container) (*runtimeapi.ContainerStatus, error) {
	if c.restored != nil {
		return c.restored, nil
	}
	st, err := r.rt.ContainerStatus(ctx, c.id)
	if err != nil {
		return nil, criError(err)
	}
	var res *runtimeapi.ContainerResources
	r.mu.Lock()
	if c.resources != nil {
		res = &runtimeapi.ContainerResources{Linux: c.resources}
	}
	r.mu.Unlock()
	return &runtimeapi.ContainerStatus{Id: c.id, Metadata: c.config.GetMetadata(), Resources: res,
		State: criState(st.State), CreatedAt: c.created.UnixNano(), StartedAt: unixNano(st.StartedAt), FinishedAt: unixNano(st.FinishedAt),
		ExitCode: int32(st.ExitCode), Image: c.config.GetImage(), ImageRef: c.imageRef, Reason: st.Reason, Message: st.Message,
		Labels: c.config.GetLabels(), Annotations: c.config.GetAnnotations(), LogPath: c.logPath, Mounts: c.config.GetMounts()}, nil
}

func criState(s model.State) runtimeapi.ContainerState {
	switch s {
	case model.StateCreated:
		return runtimeapi.ContainerState_CONTAINER_CREATED
	case model.StateRunning:
		return runtimeapi.ContainerState_CONTAINER_RUNNING
	case model.StateExited:
		return runtimeapi.ContainerState_CONTAINER_EXITED
	}
	return runtimeapi.ContainerState_CONTAINER_UNKNOWN
}

// UpdateContainerResources applies an in-place resize: the container's
// status reports the new CPU and memory settings from then on, and its
// cgroup files show them.
func (r *Runtime) UpdateContainerResources(_ context.Context, id string, res *runtimeapi.ContainerResources) error {
	r.mu.Lock()
	c, ok := r.containers[id]
	if ok && res.GetLinux() != nil {
		c.resources = res.GetLinux()
		r.changes++
	}
	r.mu.Unlock()
	if !ok {
		return notFound("container", id)
	}
	if res.GetLinux() == nil {
		return nil
	}
	return criError(r.rt.UpdateResources(id, res.GetLinux()))
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
	res, err := r.rt.ExecSync(ctx, id, cmd, timeout)
	if err != nil {
		return nil, nil, criError(err)
	}
	if res.ExitCode != 0 {
		return []byte(res.Stdout), []byte(res.Stderr), utilexec.CodeExitError{
			Err:  fmt.Errorf("command '%s' exited with %d: %s", strings.Join(cmd, " "), res.ExitCode, res.Stderr),
			Code: res.ExitCode,
		}
	}
	return []byte(res.Stdout), []byte(res.Stderr), nil
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
	c.log = openLog(c.logPath)
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

// logLine writes a line the simulated process wrote to its log file.
func (r *Runtime) logLine(id string, line model.LogLine) {
	r.mu.Lock()
	c, ok := r.containers[id]
	var l *logFile
	if ok {
		l = c.log
	}
	r.mu.Unlock()
	l.write(time.Now(), line.Stream, line.Text, line.Partial)
}

// mountType is the file system the kubelet mounted at or above hostPath
// (Config.Mounts), or "" for the host directory's own.
func (r *Runtime) mountType(hostPath string) string {
	if r.cfg.Mounts == nil || hostPath == "" {
		return ""
	}
	return r.cfg.Mounts(hostPath)
}
