// Package model is the simulated container runtime's model: it keeps sandboxes,
// images and containers in memory, makes every operation take a time from a
// seeded latency model divided by a live speed, and runs each container as a
// small program derived from its command (see parseProgram), so containers
// can run, exit with a code, write logs and answer exec probes. It needs no
// root and runs on any OS.
package model

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/podtrace/podtrace/engine/cri/sim/proc"
)

// Config configures a simulated runtime for one node.
type Config struct {
	// Clock drives every wait and stamps every state change.
	Clock clock.WithTicker
	// Speed, when set, divides each latency of the model as it is waited
	// (2 = twice as fast), read at every wait so a change applies at once.
	Speed func() float64
	// Latency is the timing model; DefaultLatency when nil.
	Latency *Latency
	// Seed makes latencies and IDs repeatable.
	Seed int64
	// Node names the node, for IDs.
	Node string
	// OnLog, when set, is told each line a container writes, as it writes
	// it (a CRI runtime writes them to the container's log file).
	OnLog func(containerID string, line LogLine)
}

// Runtime is the simulated runtime. It is safe for concurrent use.
type Runtime struct {
	clock clock.WithTicker
	model model
	node  string
	onLog func(string, LogLine)

	mu         sync.Mutex
	sandboxes  map[string]*sandbox
	containers map[string]*container
	images     map[string]Image // normalized ref → image
	// gen counts the changes to sandboxes, containers' states and images
	// (see Generation).
	gen uint64
}

// Generation returns a number that changes whenever a sandbox, a
// container's state or an image changes: what a runtime that keeps its
// state on disk writes (see engine/cri/sim's Save) is unchanged as long as
// it is.
func (r *Runtime) Generation() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gen
}

type sandbox struct {
	id    string
	cfg   SandboxConfig
	ready bool
}

type container struct {
	status  ContainerStatus
	sandbox string
	key     string
	prog    program
	env     []string // KEY=value
	fs      *proc.FS
	uid     int64 // the user and group its processes run as
	gid     int64
	sec     proc.Security // its privileges
	dir     string        // their working directory
	image   string        // its image (normalized)
	host    string        // its pod's host name
	net     proc.Network  // where its servers listen
	stdio   *stdio        // its process's input and terminal, and the attached clients
	stop    chan struct{} // closed when the container is stopped
	exited  chan struct{} // closed when it has exited
}

// New returns an empty simulated runtime.
func New(cfg Config) *Runtime {
	lat := DefaultLatency
	if cfg.Latency != nil {
		lat = *cfg.Latency
	}
	return &Runtime{clock: cfg.Clock, model: model{Latency: lat, seed: cfg.Seed, speed: cfg.Speed}, node: cfg.Node, onLog: cfg.OnLog,
		sandboxes: map[string]*sandbox{}, containers: map[string]*container{}, images: map[string]Image{}}
}

// wait sleeps d on the clock, or returns ctx's error.
func (r *Runtime) wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := r.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *Runtime) id(kind, key string) string {
	return digestOf(fmt.Sprintf("%d/%s/%s/%s", r.model.seed, r.node, kind, key))[len("sha256:"):]
}

// RunPodSandbox starts a pause container after the sandbox latency.
func (r *Runtime) RunPodSandbox(ctx context.Context, cfg SandboxConfig) (string, error) {
	key := fmt.Sprintf("%s/%s/%d", cfg.Namespace, cfg.Name, cfg.Attempt)
	if err := r.wait(ctx, r.model.scale(r.model.Sandbox, "sandbox/"+key)); err != nil {
		return "", err
	}
	id := r.id("sandbox", key+"/"+cfg.UID)
	r.mu.Lock()
	r.sandboxes[id] = &sandbox{id: id, cfg: cfg, ready: true}
	r.gen++
	r.mu.Unlock()
	return id, nil
}

// StopPodSandbox kills every container of the sandbox and marks it not ready.
func (r *Runtime) StopPodSandbox(ctx context.Context, id string) error {
	r.mu.Lock()
	sb, ok := r.sandboxes[id]
	var ids []string
	for cid, c := range r.containers {
		if c.sandbox == id {
			ids = append(ids, cid)
		}
	}
	r.mu.Unlock()
	if !ok {
		return nil // stopping is idempotent, as in CRI
	}
	for _, cid := range ids {
		if err := r.StopContainer(ctx, cid, 0); err != nil {
			return err
		}
	}
	r.mu.Lock()
	sb.ready = false
	r.gen++
	r.mu.Unlock()
	return r.wait(ctx, r.model.scale(r.model.Stop, "stopsandbox/"+id))
}

// RemovePodSandbox forgets the sandbox and its containers.
func (r *Runtime) RemovePodSandbox(ctx context.Context, id string) error {
	if err := r.StopPodSandbox(ctx, id); err != nil {
		return err
	}
	r.mu.Lock()
	delete(r.sandboxes, id)
	for cid, c := range r.containers {
		if c.sandbox == id {
			delete(r.containers, cid)
		}
	}
	r.gen++
	r.mu.Unlock()
	return r.wait(ctx, r.model.scale(r.model.Remove, "removesandbox/"+id))
}

// PullImage resolves image against the simulated registries (see resolve)
// and, after the pull time for its size, stores it in the node's cache.
func (r *Runtime) PullImage(ctx context.Context, image string, auth *AuthConfig) (Image, error) {
	ref, err := parseReference(image)
	if err != nil {
		return Image{}, fmt.Errorf("rpc error: code = Unknown desc = failed to pull and unpack image %q: %w", image, err)
	}
	res := resolve(ref)
	if res.private && auth != nil && (auth.Username != "" || auth.Auth != "") {
		res.private = false
	}
	if perr := pullError(ref, res); perr != nil {
		if err := r.wait(ctx, r.model.scale(r.model.PullBase, "pullfail/"+ref.String())); err != nil {
			return Image{}, err
		}
		return Image{}, perr
	}
	if err := r.wait(ctx, r.model.pull(res.size, "pull/"+r.node+"/"+ref.String())); err != nil {
		return Image{}, err
	}
	digest := digestOf("manifest:" + ref.String())
	if ref.Digest != "" {
		digest = ref.Digest
	}
	img := Image{Ref: ref.String(), ID: digestOf("config:" + ref.String()), RepoDigest: ref.Name() + "@" + digest, Size: res.size}
	r.mu.Lock()
	r.images[ref.String()] = img
	r.gen++
	r.mu.Unlock()
	return img, nil
}

// CreateContainer prepares a container from cfg after the create latency.
func (r *Runtime) CreateContainer(ctx context.Context, sandboxID string, cfg ContainerConfig) (string, error) {
	r.mu.Lock()
	sb, ok := r.sandboxes[sandboxID]
	r.mu.Unlock()
	if !ok || !sb.ready {
		return "", fmt.Errorf("rpc error: code = NotFound desc = failed to get sandbox %q: %w", sandboxID, ErrNotFound)
	}
	prog, err := parseProgram(cfg.Image, cfg.Command, cfg.Args, cfg.Annotations)
	if err != nil {
		return "", fmt.Errorf("rpc error: code = Unknown desc = failed to create containerd container: %w", err)
	}
	key := fmt.Sprintf("%s/%s/%s/%d", sb.cfg.Namespace, sb.cfg.Name, cfg.Name, cfg.Attempt)
	if err := r.wait(ctx, r.model.scale(r.model.Create, "create/"+key)); err != nil {
		return "", err
	}
	stdio, err := newStdio(cfg, prog.argv != nil)
	if err != nil {
		return "", fmt.Errorf("rpc error: code = Unknown desc = failed to create containerd container: %w", err)
	}
	id := r.id("container", key+"/"+sb.cfg.UID)
	r.mu.Lock()
	img := r.images[cfg.Image]
	r.containers[id] = &container{
		status: ContainerStatus{ID: id, Name: cfg.Name, State: StateCreated, CreatedAt: r.clock.Now(),
			Image: cfg.Image, ImageID: img.RepoDigest},
		sandbox: sandboxID, key: key, prog: prog, env: environ(cfg.Env), fs: proc.NewFS(cfg.Mounts, cfg.ReadOnlyRoot).WithImage(cfg.Image).WithResources(cfg.Resources).WithSysctls(cfg.Sysctls, cfg.Security.Privileged), uid: cfg.UID, gid: cfg.GID, sec: cfg.Security, dir: cfg.WorkingDir, stdio: stdio,
		image: cfg.Image, host: sb.cfg.Hostname, net: cfg.Net,
		stop: make(chan struct{}), exited: make(chan struct{}),
	}
	r.gen++
	r.mu.Unlock()
	return id, nil
}

// StartContainer starts the container's program after the start latency.
func (r *Runtime) StartContainer(ctx context.Context, id string) error {
	r.mu.Lock()
	c, ok := r.containers[id]
	r.mu.Unlock()
	if !ok {
		return fmt.Errorf("rpc error: code = NotFound desc = container %q: %w", id, ErrNotFound)
	}
	if err := r.wait(ctx, r.model.scale(r.model.Start, "start/"+c.key)); err != nil {
		return err
	}
	now := r.clock.Now()
	r.mu.Lock()
	if c.status.State != StateCreated {
		r.mu.Unlock()
		return fmt.Errorf("rpc error: code = Unknown desc = container %s is in %s state, not %s", id, c.status.State, StateCreated)
	}
	c.status.State, c.status.StartedAt = StateRunning, now
	r.gen++
	r.mu.Unlock()
	go r.run(c)
	return nil
}

// run plays the container's program until it exits or is stopped.
func (r *Runtime) run(c *container) {
	if c.prog.argv != nil {
		r.runCommand(c)
		return
	}
	for _, st := range c.prog.steps {
		switch st.op {
		case "sleep":
			t := r.clock.NewTimer(st.d)
			select {
			case <-t.C():
			case <-c.stop:
				t.Stop()
				return
			}
		case "exit":
			r.exit(c, st.code)
			return
		case "forever":
			return
		}
	}
	r.exit(c, 0)
}

// runCommand runs the container's command until it exits, its output
// going to the container's log; a stop ends it, and StopContainer
// records the exit.
func (r *Runtime) runCommand(c *container) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-c.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	stdout, stderr := &logWriter{r: r, c: c, stream: "stdout"}, &logWriter{r: r, c: c, stream: "stderr"}
	in, out, errw, done := r.outputOf(c, stdout, stderr)
	p := r.process(c, c.prog.argv)
	p.Stdin, p.Stdout, p.Stderr, p.Terminal = in, out, errw, c.stdio.tty
	code, err := proc.Run(ctx, p)
	done()
	c.stdio.close()
	stdout.flush()
	stderr.flush()
	if ctx.Err() == nil { // else stopped: StopContainer records the exit
		if err != nil {
			code = 128
		}
		r.exit(c, code)
	}
}

// process is argv as a process of container c.
func (r *Runtime) process(c *container, argv []string) proc.Process {
	return proc.Process{Argv: argv, Env: c.env, FS: c.fs, Sleep: r.wait, UID: c.uid, GID: c.gid, Security: c.sec, Dir: c.dir,
		Image: c.image, Hostname: c.host, Net: c.net}
}

func (r *Runtime) logged(id string, line LogLine) {
	if r.onLog != nil {
		r.onLog(id, line)
	}
}

// exit records the container's exit with code, unless it already exited.
func (r *Runtime) exit(c *container, code int) {
	now := r.clock.Now()
	r.mu.Lock()
	if c.status.State != StateRunning {
		r.mu.Unlock()
		return
	}
	c.status.State, c.status.FinishedAt, c.status.ExitCode = StateExited, now, code
	c.status.Reason = "Completed"
	if code != 0 {
		c.status.Reason = "Error"
	}
	close(c.exited)
	r.gen++
	r.mu.Unlock()
}

// StopContainer sends SIGTERM: most programs exit 0 after the stop latency;
// shells and sleep (PID 1 without a handler) ignore it and are killed
// with SIGKILL (exit 137) when timeout runs out.
func (r *Runtime) StopContainer(ctx context.Context, id string, timeout time.Duration) error {
	r.mu.Lock()
	c, ok := r.containers[id]
	if !ok {
		r.mu.Unlock()
		return nil
	}
	running := c.status.State == StateRunning
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	r.mu.Unlock()
	if !running {
		r.mu.Lock()
		if c.status.State == StateCreated {
			c.status.State, c.status.FinishedAt = StateExited, r.clock.Now()
			r.gen++
		}
		r.mu.Unlock()
		return nil
	}
	code := 0
	wait := r.model.scale(r.model.Stop, "stop/"+c.key)
	if c.prog.ignoresTerm {
		code, wait = 137, timeout
	} else if timeout < wait {
		code, wait = 137, timeout
	}
	if err := r.wait(ctx, wait); err != nil {
		return err
	}
	r.exit(c, code)
	return nil
}

// RemoveContainer forgets a container.
func (r *Runtime) RemoveContainer(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.containers[id]; ok && c.status.State == StateRunning {
		return fmt.Errorf("rpc error: code = Unknown desc = container %s is running", id)
	}
	delete(r.containers, id)
	r.gen++
	return nil
}

// ContainerStatus returns the container's state.
func (r *Runtime) ContainerStatus(_ context.Context, id string) (ContainerStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[id]
	if !ok {
		return ContainerStatus{}, fmt.Errorf("container %q: %w", id, ErrNotFound)
	}
	return c.status, nil
}

// Restore puts images pulled before a restart back on the node, as
// containerd's content store keeps them across a reboot.
func (r *Runtime) Restore(imgs ...Image) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, img := range imgs {
		r.images[img.Ref] = img
	}
	r.gen++
}

// Images returns the images on the node.
func (r *Runtime) Images() []Image {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Image, 0, len(r.images))
	for _, img := range r.images {
		out = append(out, img)
	}
	return out
}

// RemoveImage removes an image (a normalized reference) from the node.
func (r *Runtime) RemoveImage(ref string) {
	r.mu.Lock()
	delete(r.images, ref)
	r.gen++
	r.mu.Unlock()
}
