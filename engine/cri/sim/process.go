package sim

import (
	"context"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podtrace/podtrace/engine/cri/sim/agnhost"
	"github.com/podtrace/podtrace/engine/cri/sim/model"
	"github.com/podtrace/podtrace/engine/cri/sim/proc"
)

// process is a container's main process as the simulated runtime runs it
// (engine/cri/sim/proc): its program, what it runs with, its input and
// terminal, and the signals of its end. Its state (created, running,
// exited, its exit code) is the container's CRI status.
type process struct {
	key   string // namespace/pod/container/attempt: its latency key
	prog  model.Program
	env   []string // KEY=value
	fs    *proc.FS
	uid   int64 // the user and group it runs as
	gid   int64
	sec   proc.Security // its privileges
	dir   string        // its working directory
	image string        // its image (normalized)
	host  string        // its pod's host name
	net   proc.Network  // where its servers listen
	stdio *stdio        // its input and terminal, and the attached clients
	stop  chan struct{} // closed when the container is stopped
	// exited is closed when it has exited.
	exited chan struct{}
}

// process is argv as a process of container p.
func (r *Runtime) process(p *process, argv []string) proc.Process {
	return proc.Process{Argv: argv, Env: p.env, FS: p.fs, Sleep: r.timing.Sleep, UID: p.uid, GID: p.gid, Security: p.sec, Dir: p.dir,
		Image: p.image, Hostname: p.host, Net: p.net, Programs: agnhost.Programs()}
}

// newProcess is the process of a container of cfg in a pod of sc, with
// key (see process) and program prog, that sees mounts: its environment
// (HOSTNAME, as containerd sets it, then the kubelet's), its files, the
// user, group, privileges and working directory it runs with, and its
// input and terminal. Its host name and network are its pod's.
func newProcess(key string, prog model.Program, cfg *runtimeapi.ContainerConfig, sc *runtimeapi.PodSandboxConfig, mounts []proc.Mount) (*process, error) {
	stdio, err := newStdio(cfg, prog.Argv != nil)
	if err != nil {
		return nil, err
	}
	env := map[string]string{"HOSTNAME": sc.GetHostname()}
	for _, kv := range cfg.GetEnvs() {
		env[kv.GetKey()] = string(kv.GetValue())
	}
	ref := imageRef(cfg.GetImage())
	sec := cfg.GetLinux().GetSecurityContext()
	return &process{key: key, prog: prog, env: environ(env), image: ref, stdio: stdio,
		fs: proc.NewFS(mounts, sec.GetReadonlyRootfs()).WithImage(ref).WithResources(cfg.GetLinux().GetResources()).
			WithSysctls(sc.GetLinux().GetSysctls(), sec.GetPrivileged()),
		uid: sec.GetRunAsUser().GetValue(), gid: sec.GetRunAsGroup().GetValue(), dir: cfg.GetWorkingDir(),
		sec: proc.Security{Privileged: sec.GetPrivileged(), NoNewPrivs: sec.GetNoNewPrivs(),
			AddCaps: sec.GetCapabilities().GetAddCapabilities(), DropCaps: sec.GetCapabilities().GetDropCapabilities()},
		stop: make(chan struct{}), exited: make(chan struct{})}, nil
}

// run plays the container's program until it exits or is stopped.
func (r *Runtime) run(c *container) {
	p := c.proc
	if p.prog.Argv != nil {
		r.runCommand(c)
		return
	}
	code, exits := p.prog.Play(func(d time.Duration) bool {
		t := r.timing.Clock.NewTimer(d)
		select {
		case <-t.C():
			return true
		case <-p.stop:
			t.Stop()
			return false
		}
	})
	if exits {
		r.exit(c, code)
	}
}

// runCommand runs the container's command until it exits, its output
// going to the container's log; a stop ends it, and StopContainer
// records the exit.
func (r *Runtime) runCommand(c *container) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-c.proc.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	stdout, stderr := &logWriter{r: r, c: c, stream: "stdout"}, &logWriter{r: r, c: c, stream: "stderr"}
	in, out, errw, done := outputOf(c.proc.stdio, stdout, stderr)
	p := r.process(c.proc, c.proc.prog.Argv)
	p.Stdin, p.Stdout, p.Stderr, p.Terminal = in, out, errw, c.proc.stdio.tty
	code, err := proc.Run(ctx, p)
	done()
	c.proc.stdio.close()
	stdout.flush()
	stderr.flush()
	if ctx.Err() == nil { // else stopped: StopContainer records the exit
		if err != nil {
			code = 128
		}
		r.exit(c, code)
	}
}

// exit records the container's exit with code, unless it already exited:
// reason Completed for 0, else Error, as containerd gives them.
func (r *Runtime) exit(c *container, code int) {
	now := r.timing.Clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	st := c.status
	if st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return
	}
	st.State, st.FinishedAt, st.ExitCode = runtimeapi.ContainerState_CONTAINER_EXITED, now.UnixNano(), int32(code)
	st.Reason = "Completed"
	if code != 0 {
		st.Reason = "Error"
	}
	close(c.proc.exited)
	r.changes++
}
