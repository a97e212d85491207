package kubelet

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"

	"github.com/podtrace/podtrace/engine/kubelet/runtime"
	"github.com/podtrace/podtrace/engine/kubelet/server"
)

// defaultKubeletPort is the port a node without a kubelet API server
// advertises (the kubelet's --port default).
const defaultKubeletPort = 10250

// serveAPI starts the kubelet's API server (pods' logs, exec, attach and
// port-forward, as kube-apiserver reaches them) on the node's InternalIP and
// a free port, when a serving certificate is configured. A 127.x.y.z
// address the host does not have (only Linux routes all of 127/8 to
// loopback) falls back to 127.0.0.1, which the node then advertises.
func (k *Kubelet) serveAPI(ctx context.Context) error {
	if k.cfg.ServingCert == nil {
		return nil
	}
	start := func(ip string) (*server.Server, error) {
		cert, err := k.cfg.ServingCert(net.ParseIP(ip))
		if err != nil {
			return nil, fmt.Errorf("kubelet %s: serving certificate: %w", k.cfg.NodeName, err)
		}
		return server.Start(ctx, server.Config{Addr: net.JoinHostPort(ip, "0"), Certificate: cert, Host: apiHost{k}})
	}
	srv, err := start(k.cfg.InternalIP)
	if ip := net.ParseIP(k.cfg.InternalIP); err != nil && ip != nil && ip.IsLoopback() && k.cfg.InternalIP != "127.0.0.1" {
		if srv, err = start("127.0.0.1"); err == nil {
			k.cfg.InternalIP = "127.0.0.1"
		}
	}
	if err != nil {
		return fmt.Errorf("kubelet %s: %w", k.cfg.NodeName, err)
	}
	k.apiPort = int32(srv.Port())
	return nil
}

// APIPort is the port of the kubelet's API server the node advertises
// (status.daemonEndpoints.kubeletEndpoint.port): the server's, or 10250
// when the kubelet serves none.
func (k *Kubelet) APIPort() int32 {
	if k.apiPort == 0 {
		return defaultKubeletPort
	}
	return k.apiPort
}

// apiHost answers the kubelet API server's requests from the kubelet's
// pods and runtime.
type apiHost struct{ k *Kubelet }

// workerByName returns the pod worker of the pod with namespace and name, as the
// kubelet's pod manager finds it.
func (k *Kubelet) workerByName(namespace, name string) *podWorker {
	k.mu.Lock()
	defer k.mu.Unlock()
	var found *podWorker
	for _, w := range k.workers {
		if p := w.currentPod(); p.Namespace == namespace && p.Name == name {
			if found == nil || p.DeletionTimestamp == nil {
				found = w
			}
		}
	}
	return found
}

// worker returns the pod worker of the pod with uid.
func (k *Kubelet) worker(uid types.UID) *podWorker {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.workers[uid]
}

// GetPodByName returns the pod the node runs.
func (h apiHost) GetPodByName(namespace, name string) (*v1.Pod, bool) {
	w := h.k.workerByName(namespace, name)
	if w == nil {
		return nil, false
	}
	return w.currentPod(), true
}

// ContainerLogs writes the container's log as the kubelet's
// GetKubeletContainerLogs and the CRI log reader do.
func (h apiHost) ContainerLogs(ctx context.Context, pod *v1.Pod, container string, opts *v1.PodLogOptions, out io.Writer) error {
	w := h.k.worker(pod.UID)
	if w == nil {
		return fmt.Errorf("pod %q cannot be found - no logs available", pod.Name)
	}
	id, err := logContainerID(w, pod, container, opts.Previous)
	if err != nil {
		return err
	}
	if _, err := out.Write([]byte{}); err != nil {
		return err
	}
	return writeLogs(ctx, h.k.rt, id, opts, out, h.k.clock.Now())
}

// logContainerID is the instance whose log a request reads, with the
// kubelet's validateContainerLogStatus errors.
func logContainerID(w *podWorker, pod *v1.Pod, container string, previous bool) (string, error) {
	ids := w.logIDs(container)
	if previous {
		if ids[1] == "" {
			return "", fmt.Errorf("previous terminated container %q in pod %q not found", container, pod.Name)
		}
		return ids[1], nil
	}
	if ids[0] != "" {
		return ids[0], nil
	}
	reason := "ContainerCreating"
	for _, list := range [][]v1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for _, s := range list {
			if s.Name == container && s.State.Waiting != nil && s.State.Waiting.Reason != "" {
				reason = s.State.Waiting.Reason
			}
		}
	}
	switch reason {
	case "ErrImagePull":
		reason = "image can't be pulled"
	case "ImagePullBackOff":
		reason = "trying and failing to pull image"
	}
	return "", fmt.Errorf("container %q in pod %q is waiting to start: %s", container, pod.Name, reason)
}

// logPollInterval is how often a followed log is read again.
const logPollInterval = 250 * time.Millisecond

// writeLogs writes container id's lines as the CRI log reader does: the
// last TailLines of them, those since SinceSeconds or SinceTime (by the
// node's clock, now), each prefixed with its RFC 3339 time when
// Timestamps is set, at most LimitBytes; with Follow, new lines until the
// container stops running or ctx ends.
func writeLogs(ctx context.Context, rt runtime.Runtime, id string, opts *v1.PodLogOptions, out io.Writer, now time.Time) error {
	var since time.Time
	switch {
	case opts.SinceSeconds != nil:
		since = now.Add(-time.Duration(*opts.SinceSeconds) * time.Second)
	case opts.SinceTime != nil:
		since = opts.SinceTime.Time
	}
	limit := int64(-1)
	if opts.LimitBytes != nil {
		limit = *opts.LimitBytes
	}
	sent := 0
	for first := true; ; first = false {
		running := true
		if !first {
			st, err := rt.ContainerStatus(ctx, id)
			running = err == nil && st.State == runtime.StateRunning
		}
		lines, err := rt.ContainerLogs(ctx, id)
		if err != nil {
			return err
		}
		if first && opts.TailLines != nil && int64(len(lines)) > *opts.TailLines {
			sent = len(lines) - int(*opts.TailLines)
		}
		for ; sent < len(lines); sent++ {
			l := lines[sent]
			if !since.IsZero() && l.Time.Before(since) {
				continue
			}
			b := []byte(l.Text + "\n")
			if opts.Timestamps {
				b = append([]byte(l.Time.UTC().Format(time.RFC3339Nano)+" "), b...)
			}
			if limit >= 0 && int64(len(b)) >= limit {
				_, err := out.Write(b[:limit])
				return err
			}
			if _, err := out.Write(b); err != nil {
				return err
			}
			limit -= int64(len(b))
		}
		if !opts.Follow || !running {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(logPollInterval):
		}
	}
}

// runningContainer is the ID of the pod's container when it runs.
func (h apiHost) runningContainer(ctx context.Context, pod *v1.Pod, container string) (string, bool) {
	w := h.k.worker(pod.UID)
	if w == nil {
		return "", false
	}
	id := w.logIDs(container)[0]
	if id == "" {
		return "", false
	}
	if st, err := h.k.rt.ContainerStatus(ctx, id); err != nil || st.State != runtime.StateRunning {
		return "", false
	}
	return id, true
}

// Exec finds the running container as the kubelet's GetExec does ("container
// not found"); a runtime without Exec (the simulated one) answers in the
// stream with gRPC's Unimplemented, as a CRI runtime without Exec would.
func (h apiHost) Exec(ctx context.Context, pod *v1.Pod, container string) (server.ExecFunc, error) {
	id, ok := h.runningContainer(ctx, pod, container)
	if !ok {
		return nil, fmt.Errorf("container not found (%q)", container)
	}
	ex, ok := h.k.rt.(runtime.Execer)
	if !ok {
		return server.UnimplementedExec, nil
	}
	return func(ctx context.Context, cmd []string, stdin io.Reader, stdout, stderr io.Writer, tty bool, resize <-chan remotecommand.TerminalSize) (int, error) {
		return ex.Exec(ctx, id, cmd, runtime.ExecStreams{Stdin: stdin, Stdout: stdout, Stderr: stderr, TTY: tty, Resize: runtimeResize(ctx, resize)})
	}, nil
}

// Attach finds the running container as the kubelet's GetAttach does; a
// runtime without Attach answers in the stream with gRPC's Unimplemented.
func (h apiHost) Attach(ctx context.Context, pod *v1.Pod, container string) (server.AttachFunc, error) {
	id, ok := h.runningContainer(ctx, pod, container)
	if !ok {
		return nil, fmt.Errorf("container %s not found in pod %s_%s", container, pod.Name, pod.Namespace)
	}
	at, ok := h.k.rt.(runtime.Attacher)
	if !ok {
		return server.UnimplementedAttach, nil
	}
	return func(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, tty bool, resize <-chan remotecommand.TerminalSize) error {
		return at.Attach(ctx, id, runtime.ExecStreams{Stdin: stdin, Stdout: stdout, Stderr: stderr, TTY: tty, Resize: runtimeResize(ctx, resize)})
	}, nil
}

// PortForward finds the pod as the kubelet's GetPortForward does: it must
// have a running container ("pod not found"); a runtime without pod
// networks (the simulated one) answers each forwarded connection with
// gRPC's Unimplemented, as a CRI runtime without PortForward would.
func (h apiHost) PortForward(ctx context.Context, pod *v1.Pod) (server.PortForwardFunc, error) {
	notFound := fmt.Errorf("pod not found (%q)", pod.Name+"_"+pod.Namespace)
	w := h.k.worker(pod.UID)
	if w == nil {
		return nil, notFound
	}
	running := false
	for _, c := range containerNames(pod) {
		if _, ok := h.runningContainer(ctx, pod, c); ok {
			running = true
			break
		}
	}
	if !running {
		return nil, notFound
	}
	pf, ok := h.k.rt.(runtime.PortForwarder)
	if !ok {
		return server.UnimplementedPortForward, nil
	}
	uid := string(pod.UID)
	return func(ctx context.Context, port int32, stream io.ReadWriteCloser) error {
		return pf.PortForward(ctx, uid, port, stream)
	}, nil
}

// containerNames lists the pod's init and regular containers.
func containerNames(pod *v1.Pod) []string {
	var names []string
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			names = append(names, c.Name)
		}
	}
	return names
}

// runtimeResize relays resize events to the runtime's type until in closes.
func runtimeResize(ctx context.Context, in <-chan remotecommand.TerminalSize) <-chan runtime.TerminalSize {
	if in == nil {
		return nil
	}
	out := make(chan runtime.TerminalSize)
	go func() {
		defer close(out)
		for size := range in {
			select {
			case out <- runtime.TerminalSize{Width: size.Width, Height: size.Height}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}
