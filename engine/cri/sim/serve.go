package sim

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
)

// server answers on a pod's address: every port of its containers and
// the extra ports Config.ExtraPorts names. Any HTTP request gets 200 "ok",
// a gRPC health check SERVING; a TCP connection is accepted. While
// Config.Unhealthy holds for the pod, nothing listens, as for an
// application that stopped answering: probes get "connection refused".
type server struct {
	r     *Runtime
	sb    *sandbox
	addrs []string

	mu sync.Mutex
	// listeners are the servers answering, by address; nil while not
	// listening.
	listeners map[string]answering
	closed    bool
}

// serve starts answering on sb's address.
func (r *Runtime) serve(sb *sandbox) *server {
	seen := map[int32]bool{}
	var ports []int32
	for _, pm := range sb.config.GetPortMappings() {
		ports = append(ports, pm.GetContainerPort())
	}
	if r.cfg.ExtraPorts != nil {
		ports = append(ports, r.cfg.ExtraPorts(sb.config.GetMetadata())...)
	}
	s := &server{r: r, sb: sb}
	for _, p := range ports {
		if p > 0 && !seen[p] {
			seen[p] = true
			s.addrs = append(s.addrs, net.JoinHostPort(sb.ip, strconv.Itoa(int(p))))
		}
	}
	s.recheck()
	return s
}

// Recheck makes every pod listen or not, as Config.Unhealthy now says:
// call it when what Unhealthy answers may have changed.
func (r *Runtime) Recheck() {
	r.mu.Lock()
	var ss []*server
	for _, sb := range r.sandboxes {
		if sb.serving != nil {
			ss = append(ss, sb.serving)
		}
	}
	r.mu.Unlock()
	for _, s := range ss {
		s.recheck()
	}
}

func (s *server) recheck() {
	healthy := s.r.cfg.Unhealthy == nil || !s.r.cfg.Unhealthy(s.sb.config.GetMetadata())
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
	case healthy && s.listeners == nil:
		s.listeners = map[string]answering{}
		for _, a := range s.addrs {
			l, err := net.Listen("tcp", a)
			if err != nil {
				klog.InfoS("Simulated pod cannot answer on its address", "pod", podKey(s.sb.config.GetMetadata()), "address", a, "err", err)
				continue
			}
			s.listeners[a] = answer(l)
		}
	case !healthy && s.listeners != nil:
		s.closeLocked()
	}
}

func (s *server) closeLocked() {
	for _, srv := range s.listeners {
		srv.Close()
	}
	s.listeners = nil
}

// release stops answering on port for good: a container's program
// listens there now.
func (s *server) release(port int) {
	a := net.JoinHostPort(s.sb.ip, strconv.Itoa(port))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addrs = slices.DeleteFunc(s.addrs, func(x string) bool { return x == a })
	if srv, ok := s.listeners[a]; ok {
		srv.Close() // its connections too
		delete(s.listeners, a)
	}
}

// close stops answering for good.
func (s *server) close() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.closeLocked()
}

// podHandler answers for a simulated application: a gRPC call (HTTP/2
// without TLS, as the kubelet's gRPC probe makes it) goes to grpcServer,
// any other request gets 200 "ok".
var podHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
		grpcServer.ServeHTTP(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte("ok\n"))
})

// grpcServer serves gRPC's standard health service, which gRPC probes
// call.
var grpcServer = func() *grpc.Server {
	s := grpc.NewServer()
	healthpb.RegisterHealthServer(s, healthy{})
	return s
}()

// healthy is the health service of an application that is up: SERVING,
// whichever service the probe names.
type healthy struct {
	healthpb.UnimplementedHealthServer
}

// Check answers SERVING.
func (healthy) Check(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// answer serves podHandler on l until the server returned is closed.
// answering is a pod's answer on one address: closing it frees the
// address at once (its listener, even before Serve has taken it) and ends
// the connections open there.
type answering struct {
	l   net.Listener
	srv *http.Server
}

// Close stops answering.
func (a answering) Close() {
	a.l.Close()
	a.srv.Close()
}

func answer(l net.Listener) answering {
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true) // gRPC's prior knowledge
	// Its complaints about probe connections go nowhere, never to the
	// terminal the UI draws on.
	srv := &http.Server{Handler: podHandler, Protocols: &protocols, ReadHeaderTimeout: 5 * time.Second,
		ErrorLog: log.New(io.Discard, "", 0)}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, http.ErrServerClosed) {
			klog.V(2).InfoS("Simulated pod stopped answering", "address", l.Addr(), "err", err)
		}
	}()
	return answering{l: l, srv: srv}
}

// podNetwork is a container's network (proc.Network): its pod's address,
// and, in the pod network namespace, the host ports mapped to its
// container ports (a mapping with a host IP: the namespace is every
// node's, so a host port on all of a node's addresses cannot be told from
// another node's; outside it, host ports would be the machine's). A port the pod
// answers on by itself (a declared container port, an extra port) is
// handed over to the container's program when it listens there, as a
// real application owns the ports it serves.
type podNetwork struct {
	r  *Runtime
	sb *sandbox
}

// Listen opens TCP listeners for port.
func (n podNetwork) Listen(port int) ([]net.Listener, error) {
	n.r.mu.Lock()
	s := n.sb.serving
	n.r.mu.Unlock()
	if s != nil {
		s.release(port)
	}
	return listenAll(n.addrs(runtimeapi.Protocol_TCP, port), func(a string) (net.Listener, error) { return net.Listen("tcp", a) })
}

// ListenPacket opens UDP sockets for port.
func (n podNetwork) ListenPacket(port int) ([]net.PacketConn, error) {
	return listenAll(n.addrs(runtimeapi.Protocol_UDP, port), func(a string) (net.PacketConn, error) { return net.ListenPacket("udp", a) })
}

// addrs are where port over protocol is served: the pod's address first,
// then each host port mapped to it.
func (n podNetwork) addrs(protocol runtimeapi.Protocol, port int) []string {
	out := []string{net.JoinHostPort(n.sb.ip, strconv.Itoa(port))}
	if !n.r.podIPs {
		return out // the host's own addresses are not the pods' to take
	}
	for _, pm := range n.sb.config.GetPortMappings() {
		if pm.GetContainerPort() == int32(port) && pm.GetProtocol() == protocol && pm.GetHostPort() > 0 && pm.GetHostIp() != "" {
			out = append(out, net.JoinHostPort(pm.GetHostIp(), strconv.Itoa(int(pm.GetHostPort()))))
		}
	}
	return out
}

// listenAll opens a socket on each address: the first must open; a host
// port that cannot is logged and left out.
func listenAll[T any](addrs []string, listen func(string) (T, error)) ([]T, error) {
	var out []T
	for i, a := range addrs {
		l, err := listen(a)
		if err != nil {
			if i == 0 {
				return nil, err
			}
			klog.InfoS("Simulated pod cannot answer on its host port", "address", a, "err", err)
			continue
		}
		out = append(out, l)
	}
	return out, nil
}
