package apiserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
)

// PodPortForwardFunc finds the network a pods/portforward request reaches,
// before the connection is upgraded, as the kubelet asks the runtime for the
// port forward before it upgrades. A non-nil error is answered as the
// kubelet answers it: status 500 with the error's text.
type PodPortForwardFunc func(ctx context.Context, pod *corev1.Pod) (PortForwardFunc, error)

// PortForwardFunc copies bytes both ways between stream and port on the
// pod's loopback until either side ends (CRI PortForward's streaming side).
type PortForwardFunc func(ctx context.Context, port int32, stream io.ReadWriteCloser) error

// podPortForward serves GET and POST pods/NAME/portforward:
// kube-apiserver's PortForwardREST checks (create permission, the pod, its
// node), then the kubelet's side, served in process by cri-streaming's
// ServePortForward: SPDY (portforward.k8s.io) and websocket v4 with ports in
// the query. kubectl 1.30+'s websocket request tunnels SPDY and names no
// ports; the kubelet answers it 400 as a kubelet without
// ExtendWebSocketsToKubelet does, and kubectl falls back to SPDY.
func (s *Server) podPortForward(w http.ResponseWriter, r *http.Request, res *Resource, rt *requestTrace) {
	if !s.connectAllowed(w, r, res, rt, "portforward") {
		return
	}
	pod, err := s.portForwardTarget(r, res, rt.info)
	if err != nil {
		writeError(w, nil, err)
		return
	}
	r, err = portForwardKubeletRequest(r)
	if err != nil {
		writeError(w, nil, err)
		return
	}
	if !upgradeRequested(w, r) {
		return
	}
	opts, err := portforward.NewV4Options(r)
	if err != nil {
		writeKubeletStatus(w, http.StatusBadRequest, err)
		return
	}
	forward := UnimplementedPortForward
	if s.cfg.PodPortForward != nil {
		if forward, err = s.cfg.PodPortForward(r.Context(), pod); err != nil {
			writeKubeletError(w, err)
			return
		}
	}
	portforward.ServePortForward(w, r, portForwarder{ctx: r.Context(), forward: forward}, pod.Name, string(pod.UID), opts,
		execStreamIdleTimeout, execStreamCreationTimeout, portforward.SupportedProtocols)
}

// portForwardTarget finds the pod a request names, with
// PortForwardLocation's errors: NotFound, no node.
func (s *Server) portForwardTarget(r *http.Request, res *Resource, info requestInfo) (*corev1.Pod, error) {
	obj, err := s.stores[res].get(r.Context(), info.namespace, info.name)
	if err != nil {
		return nil, err
	}
	pod := obj.(*corev1.Pod)
	if pod.Spec.NodeName == "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", pod.Name))
	}
	return pod, nil
}

// portForwardKubeletRequest is the request as kube-apiserver sends it on to
// the kubelet: PodPortForwardOptions' ports (the "ports" query parameter,
// decoded as its url.Values conversion does) become the kubelet's "port"
// parameter, comma-joined (streamParams).
func portForwardKubeletRequest(r *http.Request) (*http.Request, error) {
	values := r.URL.Query()["ports"]
	var ports []int32
	if err := metav1.Convert_Slice_string_To_Slice_int32(&values, &ports, nil); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	out := url.Values{}
	if len(ports) > 0 {
		s := make([]string, len(ports))
		for i, p := range ports {
			s[i] = strconv.FormatInt(int64(p), 10)
		}
		out.Set(portforward.PortHeader, strings.Join(s, ","))
	}
	r = r.Clone(r.Context())
	r.URL.RawQuery, r.Form = out.Encode(), nil
	return r, nil
}

// ErrPortForwardUnimplemented is what a CRI runtime without PortForward
// answers (gRPC's Unimplemented status from the generated server stub).
var ErrPortForwardUnimplemented = errors.New("rpc error: code = Unimplemented desc = method PortForward not implemented")

// UnimplementedPortForward is the port forward of a runtime without a pod
// network: each forwarded connection's error stream reports
// ErrPortForwardUnimplemented, which kubectl prints as "an error occurred
// forwarding L -> P: error forwarding port P to pod ...".
func UnimplementedPortForward(context.Context, int32, io.ReadWriteCloser) error {
	return ErrPortForwardUnimplemented
}

// writeKubeletStatus answers as the kubelet's restful handlers do for a bad
// request: the status and the error's text.
func writeKubeletStatus(w http.ResponseWriter, code int, err error) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(err.Error()))
}

// portForwarder adapts a PortForwardFunc to ServePortForward's
// PortForwarder, under the request's context (ServePortForward passes a
// background one).
type portForwarder struct {
	ctx     context.Context
	forward PortForwardFunc
}

// PortForward forwards one connection's stream to port.
func (f portForwarder) PortForward(_ context.Context, _, _ string, port int32, stream io.ReadWriteCloser) error {
	return f.forward(f.ctx, port, stream)
}
