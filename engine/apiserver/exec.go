package apiserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/wsstream"
	utilexec "k8s.io/utils/exec"

	"github.com/podtrace/podtrace/engine/apiserver/authz"
)

// PodExecFunc finds the running container a pods/exec request names, before
// the connection is upgraded, as the kubelet's exec handler asks the runtime
// for the exec before it upgrades. A non-nil error is answered as the kubelet
// answers it: status 500 with the error's text, which kubectl prints as
// "unable to upgrade connection: <text>".
type PodExecFunc func(ctx context.Context, pod *corev1.Pod, container string) (ContainerExecFunc, error)

// ContainerExecFunc runs cmd in the container found by a PodExecFunc with the
// given process IO (nil stdin, stdout or stderr: not requested) and returns
// the command's exit code.
type ContainerExecFunc func(ctx context.Context, cmd []string, stdin io.Reader, stdout, stderr io.Writer, tty bool, resize <-chan remotecommand.TerminalSize) (int, error)

// The kubelet streaming server's defaults (streaming.DefaultConfig).
const (
	execStreamIdleTimeout     = 4 * time.Hour
	execStreamCreationTimeout = 30 * time.Second
)

// podExec serves GET and POST pods/NAME/exec: kube-apiserver's ExecREST
// checks (create permission, the pod, its container and node), then the
// kubelet's side, served in process by cri-streaming's ServeExec: SPDY
// (v1–v4.channel.k8s.io) and websocket up to v4. A websocket v5 request
// (kubectl 1.30+) fails its upgrade, so kubectl falls back to SPDY.
func (s *Server) podExec(w http.ResponseWriter, r *http.Request, res *Resource, rt *requestTrace) {
	pod, container, r, opts, ok := s.streamTarget(w, r, res, rt, "exec")
	if !ok {
		return
	}
	run := UnimplementedExec
	if s.cfg.PodExec != nil {
		var err error
		if run, err = s.cfg.PodExec(r.Context(), pod, container); err != nil {
			writeKubeletError(w, err)
			return
		}
	}
	remotecommand.ServeExec(w, r, containerExecutor(run), pod.Name, string(pod.UID), container,
		r.URL.Query()["command"], opts, execStreamIdleTimeout, execStreamCreationTimeout,
		remotecommand.SupportedStreamingProtocols)
}

// kubeletRequest is the request as kube-apiserver sends it on to the
// kubelet: PodExecOptions' stdin, stdout, stderr and tty become the
// kubelet's input, output, error and tty parameters (streamParams).
func kubeletRequest(r *http.Request) *http.Request {
	q := r.URL.Query()
	out := url.Values{"command": q["command"]}
	for api, kubelet := range map[string]string{"stdin": remotecommand.ExecStdinParam, "stdout": remotecommand.ExecStdoutParam,
		"stderr": remotecommand.ExecStderrParam, "tty": remotecommand.ExecTTYParam} {
		if on, _ := strconv.ParseBool(q.Get(api)); on {
			out.Set(kubelet, "1")
		}
	}
	r = r.Clone(r.Context())
	r.URL.RawQuery, r.Form = out.Encode(), nil
	return r
}

// ErrExecUnimplemented is what a CRI runtime without Exec answers (gRPC's
// Unimplemented status from the generated server stub).
var ErrExecUnimplemented = errors.New("rpc error: code = Unimplemented desc = method Exec not implemented")

// UnimplementedExec is the exec of a runtime that cannot run processes: the
// stream opens and reports ErrExecUnimplemented, which kubectl prints as
// "error: Internal error occurred: error executing command in container: ...".
func UnimplementedExec(context.Context, []string, io.Reader, io.Writer, io.Writer, bool, <-chan remotecommand.TerminalSize) (int, error) {
	return 0, ErrExecUnimplemented
}

// streamTarget runs what exec and attach requests start with: the method
// and permission checks, the pod and container, and the request as the
// kubelet takes it with its stream options. It answers the request itself
// and reports false when one fails.
func (s *Server) streamTarget(w http.ResponseWriter, r *http.Request, res *Resource, rt *requestTrace, sub string) (
	*corev1.Pod, string, *http.Request, *remotecommand.Options, bool) {
	if !s.connectAllowed(w, r, res, rt, sub) {
		return nil, "", nil, nil, false
	}
	pod, container, err := s.execTarget(r, res, rt.info)
	if err != nil {
		writeError(w, nil, err)
		return nil, "", nil, nil, false
	}
	if !upgradeRequested(w, r) {
		return nil, "", nil, nil, false
	}
	r = kubeletRequest(r)
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		writeError(w, nil, apierrors.NewBadRequest(err.Error()))
		return nil, "", nil, nil, false
	}
	return pod, container, r, opts, true
}

// upgradeRequested reports whether r asks to upgrade to SPDY or a
// websocket, and otherwise answers as kube-apiserver's proxy to the kubelet
// does: 400 "Upgrade request required".
func upgradeRequested(w http.ResponseWriter, r *http.Request) bool {
	if httpstream.IsUpgradeRequest(r) || wsstream.IsWebSocketRequest(r) {
		return true
	}
	writeError(w, nil, apierrors.NewBadRequest("Upgrade request required"))
	return false
}

// connectAllowed answers a pods/exec, attach or portforward request that is
// not a GET or POST, or whose user may not create the subresource, and
// reports whether the request may go on.
func (s *Server) connectAllowed(w http.ResponseWriter, r *http.Request, res *Resource, rt *requestTrace, sub string) bool {
	if rt.info.verb != "get" && rt.info.verb != "create" {
		writeError(w, nil, methodNotSupported(res, sub, r.Method))
		return false
	}
	if err := s.authorizeExecCreate(r.Context(), rt); err != nil {
		writeError(w, nil, err)
		return false
	}
	return true
}

// authorizeExecCreate checks create on the subresource (pods/exec, attach,
// portforward) for a GET (websocket) request, as ExecREST and its kin do
// with AuthorizePodWebsocketUpgradeCreatePermission (on by default since
// 1.35); a POST was authorized for create already.
func (s *Server) authorizeExecCreate(ctx context.Context, rt *requestTrace) error {
	info := rt.info
	if info.verb == "create" {
		return nil
	}
	decision, reason, err := s.cfg.Authorizer.Authorize(ctx, info.attributes(*rt.user, "create"))
	if err != nil {
		return err
	}
	if decision != authz.DecisionAllow {
		return apierrors.NewForbidden(schema.GroupResource{Group: info.apiGroup, Resource: info.resource}, info.name, errors.New(reason))
	}
	return nil
}

// execTarget finds the pod and container a request names, with
// streamLocation's errors: NotFound, an invalid container, no node.
func (s *Server) execTarget(r *http.Request, res *Resource, info requestInfo) (*corev1.Pod, string, error) {
	obj, err := s.stores[res].get(r.Context(), info.namespace, info.name)
	if err != nil {
		return nil, "", err
	}
	pod := obj.(*corev1.Pod)
	container, err := validContainer(pod, r.URL.Query().Get("container"))
	if err != nil {
		return nil, "", err
	}
	if pod.Spec.NodeName == "" {
		return nil, "", apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", pod.Name))
	}
	return pod, container, nil
}

// validContainer is the container a log, exec or attach request names, checked as
// kube-apiserver's pod strategy does (validateContainer): a named container
// must be one of the pod's (init, regular or ephemeral); with no name, the
// pod's only container.
func validContainer(pod *corev1.Pod, name string) (string, error) {
	if name != "" {
		for _, c := range podContainerNames(pod) {
			if c == name {
				return name, nil
			}
		}
		return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", name, pod.Name))
	}
	switch len(pod.Spec.Containers) {
	case 1:
		return pod.Spec.Containers[0].Name, nil
	case 0:
		return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s", pod.Name))
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s, choose one of: %s", pod.Name, podContainerNames(pod)))
}

// podContainerNames lists containers, init containers and ephemeral
// containers in podutil.VisitContainers' order.
func podContainerNames(pod *corev1.Pod) []string {
	var names []string
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		names = append(names, c.Name)
	}
	return names
}

// writeKubeletError answers as the kubelet's streaming.WriteError does when
// the runtime refuses an exec: 500 and the error's text.
func writeKubeletError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	var ks *KubeletStatusError
	if errors.As(err, &ks) {
		code = ks.Code
	}
	writeKubeletStatus(w, code, err)
}

// KubeletStatusError is a kubelet's refusal with a status code of its own,
// such as 404 "pod does not exist" for a pod the node does not run.
type KubeletStatusError struct {
	Code    int
	Message string
}

func (e *KubeletStatusError) Error() string { return e.Message }

// containerExecutor adapts a ContainerExecFunc to ServeExec's Executor.
type containerExecutor ContainerExecFunc

// ExecInContainer runs the command; a non-zero exit code becomes the
// utilexec.ExitError ServeExec reports as NonZeroExitCode (with containerd's
// CRI wording). Absent streams arrive as nil interfaces.
func (f containerExecutor) ExecInContainer(ctx context.Context, _, _, _ string, cmd []string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize, _ time.Duration) error {
	code, err := f(ctx, cmd, in, out, errw, tty, resize)
	if err != nil {
		return err
	}
	if code != 0 {
		return utilexec.CodeExitError{Err: fmt.Errorf("error executing command %v, exit code %d", cmd, code), Code: code}
	}
	return nil
}
