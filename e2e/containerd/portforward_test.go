package containerd_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/streaming/pkg/httpstream"
)

// TestPortForwardReachesThePod forwards a local port to a demo pod's HTTP
// port with client-go's port forwarder, as kubectl 1.33 (SPDY tunneled over
// websocket first, SPDY on an upgrade failure) and kubectl 1.27 (SPDY) do:
// a GET through the local port is answered by the pod itself, once its
// readiness probe says it listens.
func TestPortForwardReachesThePod(t *testing.T) {
	c := startCluster(t, 1)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pf", Labels: map[string]string{"app": "pf"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "demo", Image: "podtrace.dev/demo:1.0",
			Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
			// Ready once it answers, not once its process starts.
			ReadinessProbe: &corev1.Probe{PeriodSeconds: 1, ProbeHandler: corev1.ProbeHandler{
				HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)}}}}}}}
	if _, err := c.AdminClient().CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitPods(t, "app=pf", 2*time.Minute, "the pod Ready", func(p []corev1.Pod) bool { return len(p) == 1 && ready(p[0]) })
	for _, proto := range []string{"websocket-fallback", "spdy"} {
		t.Run(proto, func(t *testing.T) {
			local := c.portForward(t, proto, "pf", 8080)
			for i := 0; i < 2; i++ { // two connections over one forward
				if got := httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/", local)); !strings.HasPrefix(got, "hello from pf,") {
					t.Errorf("GET through the forward: %q, want hello from pf", got)
				}
			}
		})
	}
}

// portForward forwards a free local port to port of pod with client-go's
// dialer for proto, until the test ends, and returns the local port.
func (c *cluster) portForward(t *testing.T, proto, pod string, port int) uint16 {
	t.Helper()
	cfg := c.AdminRestConfig()
	url := c.AdminClient().CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name(pod).SubResource("portforward").URL()
	transport, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, "POST", url)
	if proto == "websocket-fallback" {
		ws, err := portforward.NewSPDYOverWebsocketDialer(url, cfg)
		if err != nil {
			t.Fatal(err)
		}
		dialer = portforward.NewFallbackDialer(ws, dialer, func(err error) bool {
			return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
		})
	}
	stop, ready := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf(":%d", port)}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	errc, done := make(chan error, 1), make(chan struct{})
	go func() { errc <- fw.ForwardPorts(); close(done) }()
	t.Cleanup(func() { close(stop); <-done })
	select {
	case <-ready:
	case err := <-errc:
		t.Fatalf("port forward: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("port forward not ready after 30s")
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) != 1 {
		t.Fatalf("forwarded ports %v, %v", ports, err)
	}
	return ports[0].Local
}

// httpGet returns the body of a GET of url.
func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return string(b)
}
