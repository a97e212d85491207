// Package server is a node's kubelet API as kube-apiserver reaches it for
// pods/log, pods/exec, pods/attach and pods/portforward: the paths of the
// kubelet's own server (pkg/kubelet/server) over HTTPS, with its
// parameters, status codes and error texts. Exec, attach and port-forward
// are served in process by cri-streaming, as a CRI runtime's streaming
// server serves the URLs the kubelet proxies them to.
//
// Authentication: the kubelet authenticates and authorizes its callers
// (webhook to kube-apiserver, or its client CA); this server accepts any
// caller. It listens on loopback only and kube-apiserver, started without
// --kubelet-client-certificate, presents no client certificate.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/cri-streaming/pkg/streaming"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
)

// Host is the node the server answers for: its pods (the kubelet's pod
// manager) and its runtime's logs and streams.
type Host interface {
	// GetPodByName returns the pod the node runs with that namespace and
	// name.
	GetPodByName(namespace, name string) (*v1.Pod, bool)
	// ContainerLogs writes the log of the pod's container as opts select it,
	// as the kubelet's GetKubeletContainerLogs does; an error before anything
	// was written is answered 400 with its text.
	ContainerLogs(ctx context.Context, pod *v1.Pod, container string, opts *v1.PodLogOptions, w io.Writer) error
	// Exec finds the running container an exec names, as the kubelet's
	// GetExec does before the connection is upgraded.
	Exec(ctx context.Context, pod *v1.Pod, container string) (ExecFunc, error)
	// Attach finds the running container an attach names (GetAttach).
	Attach(ctx context.Context, pod *v1.Pod, container string) (AttachFunc, error)
	// PortForward finds the running pod a port-forward reaches
	// (GetPortForward).
	PortForward(ctx context.Context, pod *v1.Pod) (PortForwardFunc, error)
}

// Config configures a Server.
type Config struct {
	// Addr is the host:port to listen on; port 0 picks a free one.
	Addr string
	// Certificate is the TLS serving certificate.
	Certificate tls.Certificate
	// Host answers the requests.
	Host Host
}

// Server is a running kubelet API server.
type Server struct {
	ln   net.Listener
	srv  *http.Server
	done chan struct{}
}

// The kubelet streaming server's defaults (streaming.DefaultConfig, and the
// kubelet's StreamingConnectionIdleTimeout).
const (
	streamIdleTimeout     = 4 * time.Hour
	streamCreationTimeout = 30 * time.Second
)

// Start listens on cfg.Addr and serves until ctx ends or Close is called.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Host == nil {
		return nil, errors.New("kubelet server: Host is required")
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("kubelet server: %w", err)
	}
	s := &Server{ln: ln, done: make(chan struct{}),
		srv: &http.Server{Handler: Handler(cfg.Host), ReadHeaderTimeout: 30 * time.Second,
			BaseContext: func(net.Listener) context.Context { return ctx },
			// HTTP/1.1 only: SPDY and websocket upgrades hijack the connection.
			TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cfg.Certificate},
				NextProtos: []string{"http/1.1"}},
			TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){}}}
	go func() {
		defer close(s.done)
		_ = s.srv.ServeTLS(ln, "", "")
	}()
	go func() {
		select {
		case <-ctx.Done():
			s.Close()
		case <-s.done:
		}
	}()
	return s, nil
}

// Port is the port the server listens on.
func (s *Server) Port() int { return s.ln.Addr().(*net.TCPAddr).Port }

// Addr is the host:port the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server and its open connections; upgraded ones (exec,
// attach and port-forward streams) end with the context Start was given.
func (s *Server) Close() {
	_ = s.srv.Close()
	<-s.done
}

// Handler serves the kubelet's paths for host:
//
//	GET       /containerLogs/{namespace}/{pod}/{container}
//	GET, POST /exec/{namespace}/{pod}[/{uid}]/{container}
//	GET, POST /attach/{namespace}/{pod}[/{uid}]/{container}
//	GET, POST /portForward/{namespace}/{pod}[/{uid}]
func Handler(host Host) http.Handler {
	mux := http.NewServeMux()
	h := handlers{host}
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", h.containerLogs)
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		mux.HandleFunc(m+" /exec/{namespace}/{pod}/{container}", h.exec)
		mux.HandleFunc(m+" /exec/{namespace}/{pod}/{uid}/{container}", h.exec)
		mux.HandleFunc(m+" /attach/{namespace}/{pod}/{container}", h.attach)
		mux.HandleFunc(m+" /attach/{namespace}/{pod}/{uid}/{container}", h.attach)
		mux.HandleFunc(m+" /portForward/{namespace}/{pod}", h.portForward)
		mux.HandleFunc(m+" /portForward/{namespace}/{pod}/{uid}", h.portForward)
	}
	return mux
}

type handlers struct{ host Host }

// writeError answers as go-restful's Response.WriteError does in the
// kubelet's handlers: the status and the error's text.
func writeError(w http.ResponseWriter, code int, err error) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(err.Error()))
}

// pod finds the pod a stream request names, answering 404 as getExec,
// getAttach and getPortForward do when the node does not run it.
func (h handlers) pod(w http.ResponseWriter, r *http.Request) (*v1.Pod, bool) {
	pod, ok := h.host.GetPodByName(r.PathValue("namespace"), r.PathValue("pod"))
	if !ok {
		writeError(w, http.StatusNotFound, errors.New("pod does not exist"))
		return nil, false
	}
	return pod, true
}

// podFullName is kubecontainer.GetPodFullName: NAME_NAMESPACE.
func podFullName(pod *v1.Pod) string { return pod.Name + "_" + pod.Namespace }

// containerSpec is kubecontainer.GetContainerSpec: the named init, regular
// or ephemeral container of the pod.
func containerSpec(pod *v1.Pod, name string) *v1.Container {
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if c := &pod.Spec.EphemeralContainers[i]; c.Name == name {
			return (*v1.Container)(&c.EphemeralContainerCommon)
		}
	}
	return nil
}

// streamTarget reads what exec and attach share: the stream options, the
// pod and the container; it has answered the request when ok is false.
func (h handlers) streamTarget(w http.ResponseWriter, r *http.Request) (*remotecommand.Options, *v1.Pod, string, bool) {
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return nil, nil, "", false
	}
	pod, ok := h.pod(w, r)
	if !ok {
		return nil, nil, "", false
	}
	return opts, pod, r.PathValue("container"), true
}

// exec serves /exec as the kubelet's getExec and the CRI streaming server's
// exec handler do: SPDY (v1–v4.channel.k8s.io) and websocket up to v4.
// kube-apiserver translates kubectl's websocket v5 to SPDY itself, since
// the node does not declare ExtendWebSocketsToKubelet.
func (h handlers) exec(w http.ResponseWriter, r *http.Request) {
	opts, pod, container, ok := h.streamTarget(w, r)
	if !ok {
		return
	}
	run, err := h.host.Exec(r.Context(), pod, container)
	if err != nil {
		_ = streaming.WriteError(err, w)
		return
	}
	remotecommand.ServeExec(w, r, executor(run), podFullName(pod), string(pod.UID), container,
		r.URL.Query()["command"], opts, streamIdleTimeout, streamCreationTimeout, remotecommand.SupportedStreamingProtocols)
}

// attach serves /attach as getAttach and the CRI streaming server's attach
// handler do; the terminal setting is the container spec's, not the
// request's.
func (h handlers) attach(w http.ResponseWriter, r *http.Request) {
	opts, pod, container, ok := h.streamTarget(w, r)
	if !ok {
		return
	}
	run, err := h.host.Attach(r.Context(), pod, container)
	if err != nil {
		_ = streaming.WriteError(err, w)
		return
	}
	if spec := containerSpec(pod, container); spec != nil {
		opts.TTY = spec.TTY
	}
	if opts.TTY && opts.Stderr {
		_ = streaming.WriteError(errAttachTTYStderr, w) // the CRI streaming server's validateAttachRequest
		return
	}
	remotecommand.ServeAttach(w, r, attacher(run), podFullName(pod), string(pod.UID), container, opts,
		streamIdleTimeout, streamCreationTimeout, remotecommand.SupportedStreamingProtocols)
}

// portForward serves /portForward as getPortForward and the CRI streaming
// server's port-forward handler do: SPDY (portforward.k8s.io) and
// websocket v4 with the ports in the query. kube-apiserver tunnels
// kubectl's websocket requests over SPDY itself.
func (h handlers) portForward(w http.ResponseWriter, r *http.Request) {
	opts, err := portforward.NewV4Options(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	pod, ok := h.pod(w, r)
	if !ok {
		return
	}
	if uid := r.PathValue("uid"); uid != "" && string(pod.UID) != uid {
		writeError(w, http.StatusNotFound, errors.New("pod not found"))
		return
	}
	forward, err := h.host.PortForward(r.Context(), pod)
	if err != nil {
		_ = streaming.WriteError(err, w)
		return
	}
	portforward.ServePortForward(w, r, forwarder{ctx: r.Context(), forward: forward}, podFullName(pod), string(pod.UID), opts,
		streamIdleTimeout, streamCreationTimeout, portforward.SupportedProtocols)
}
