package kubelet_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/utils/ptr"

	"github.com/podtrace/podtrace/engine/enginetest"
	"github.com/podtrace/podtrace/engine/kubelet"
)

// TestIntegrationKubeletAPIThroughAPIServer runs pods/log, exec, attach and
// portforward through the real kube-apiserver, which finds the kubelet's
// API server from the Node's InternalIP and kubeletEndpoint port.
func TestIntegrationKubeletAPIThroughAPIServer(t *testing.T) {
	env := enginetest.Start(t, enginetest.Options{Speed: 20})
	k, err := kubelet.New(kubelet.Config{
		Client:   env.ClientFor(t, "system:node:node-1", "system:nodes"),
		NodeName: "node-1", Clock: env.Clock, Tracer: env.Tracer, PodCIDR: "10.244.1.0/24", Seed: 7,
		ServingCert: env.PKI.KubeletServingCert("node-1"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Start(env.Ctx); err != nil {
		t.Fatal(err)
	}
	admin := env.Admin()
	publishRootCA(t, admin)
	ctx := context.Background()
	enginetest.WaitFor(t, 10*time.Second, "node-1 advertising its kubelet port", func() bool {
		n, err := admin.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
		return err == nil && n.Status.DaemonEndpoints.KubeletEndpoint.Port == k.APIPort() && k.APIPort() != 10250
	})

	createPod(t, env, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "talk"},
		Spec: v1.PodSpec{NodeName: "node-1", TerminationGracePeriodSeconds: ptr.To(int64(1)),
			Containers: []v1.Container{{Name: "c", Image: "busybox:1.36", Command: []string{"sh", "-c", "echo one; echo two; sleep 3600"}}}}})
	logs := func(opts *v1.PodLogOptions) (string, error) {
		b, err := admin.CoreV1().Pods("default").GetLogs("talk", opts).DoRaw(ctx)
		return string(b), err
	}
	var last string
	var lastErr error
	deadline := time.Now().Add(20 * time.Second)
	for !strings.HasSuffix(last, "one\ntwo\n") { // after the simulated runtime's own line
		if time.Now().After(deadline) {
			t.Fatalf("logs of talk: %q %v", last, lastErr)
		}
		time.Sleep(100 * time.Millisecond)
		last, lastErr = logs(&v1.PodLogOptions{})
	}
	if out, err := logs(&v1.PodLogOptions{TailLines: ptr.To(int64(1))}); err != nil || out != "two\n" {
		t.Fatalf("tail 1: %q %v", out, err)
	}
	if out, err := logs(&v1.PodLogOptions{LimitBytes: ptr.To(int64(5))}); err != nil || out != last[:5] {
		t.Fatalf("limit 5: %q %v", out, err)
	}
	if out, err := logs(&v1.PodLogOptions{Timestamps: true, TailLines: ptr.To(int64(1))}); err != nil || !strings.HasSuffix(out, "Z two\n") {
		t.Fatalf("timestamps: %q %v", out, err)
	}
	// Following: the stream stays open with the lines so far.
	fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rc, err := admin.CoreV1().Pods("default").GetLogs("talk", &v1.PodLogOptions{Follow: true}).Stream(fctx)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(last))
	if n, err := readFull(rc, buf); err != nil || string(buf[:n]) != last {
		t.Fatalf("follow: %q %v", buf[:n], err)
	}
	rc.Close()
	// The kubelet's errors, as kube-apiserver relays them.
	_, err = admin.CoreV1().Pods("default").GetLogs("talk", &v1.PodLogOptions{Previous: true}).Stream(ctx)
	if !apierrors.IsBadRequest(err) || err.Error() != `previous terminated container "c" in pod "talk" not found` {
		t.Fatalf("previous: %#v", err)
	}

	// Exec: the simulated runtime has none, and says so in the stream, as a
	// CRI runtime without Exec does; over SPDY and over websocket v5, which
	// kube-apiserver translates to SPDY for the kubelet.
	req := admin.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("talk").SubResource("exec").
		VersionedParams(&v1.PodExecOptions{Container: "c", Command: []string{"ls"}, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	spdy, err := remotecommand.NewSPDYExecutor(env.AdminConfig(), http.MethodPost, req.URL())
	if err != nil {
		t.Fatal(err)
	}
	ws, err := remotecommand.NewWebSocketExecutor(env.AdminConfig(), http.MethodGet, req.URL().String())
	if err != nil {
		t.Fatal(err)
	}
	for name, ex := range map[string]remotecommand.Executor{"spdy": spdy, "websocket": ws} {
		var out strings.Builder
		err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &out})
		if err == nil || !strings.Contains(err.Error(), "error executing command in container: rpc error: code = Unimplemented desc = method Exec not implemented") {
			t.Errorf("%s exec: %v", name, err)
		}
	}
	attach := admin.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("talk").SubResource("attach").
		VersionedParams(&v1.PodAttachOptions{Container: "c", Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ax, err := remotecommand.NewSPDYExecutor(env.AdminConfig(), http.MethodPost, attach.URL())
	if err != nil {
		t.Fatal(err)
	}
	if err := ax.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &strings.Builder{}, Stderr: &strings.Builder{}}); err == nil ||
		!strings.Contains(err.Error(), "error attaching to container: rpc error: code = Unimplemented desc = method Attach not implemented") {
		t.Errorf("attach: %v", err)
	}
	if got := portForwardError(t, env, admin.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("talk").SubResource("portforward").URL()); !strings.Contains(got,
		"rpc error: code = Unimplemented desc = method PortForward not implemented") {
		t.Errorf("port-forward: %q", got)
	}
	// A container that does not run: the kubelet refuses before upgrading.
	bad := admin.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("talk").SubResource("exec").
		VersionedParams(&v1.PodExecOptions{Container: "nope", Command: []string{"ls"}, Stdout: true}, scheme.ParameterCodec)
	ex, _ := remotecommand.NewSPDYExecutor(env.AdminConfig(), http.MethodPost, bad.URL())
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &strings.Builder{}}); err == nil ||
		!strings.Contains(err.Error(), "container nope is not valid for pod talk") {
		t.Errorf("exec of an unknown container: %v", err)
	}
}

// portForwardError opens a port-forward of port 80 through kube-apiserver
// as kubectl's SPDY dialer does and returns what its error stream reports.
func portForwardError(t *testing.T, env *enginetest.Env, u *url.URL) string {
	t.Helper()
	transport, upgrader, err := spdy.RoundTripperFor(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	conn, _, err := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u).Dial(portforward.PortForwardProtocolV1Name)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	h := http.Header{}
	h.Set(v1.StreamType, v1.StreamTypeError)
	h.Set(v1.PortHeader, "80")
	h.Set(v1.PortForwardRequestIDHeader, "0")
	errStream, err := conn.CreateStream(h)
	if err != nil {
		t.Fatal(err)
	}
	errStream.Close()
	h.Set(v1.StreamType, v1.StreamTypeData)
	// The server may answer on the error stream, and reset the pair, as
	// soon as the data stream arrives.
	if data, err := conn.CreateStream(h); err == nil {
		defer data.Close()
	}
	b, _ := io.ReadAll(errStream)
	return string(b)
}

func readFull(r interface{ Read([]byte) (int, error) }, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := r.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
