package containerd_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	crictrd "github.com/podtrace/podtrace/engine/cri/containerd"
	"github.com/podtrace/podtrace/images"
	"github.com/podtrace/podtrace/internal/waittest"
)

// TestAgnhostOnContainerd runs the conformance suite's own program, agnhost
// 2.63.0 built here from k8s.io/kubernetes, under the name the suite pulls
// (registry.k8s.io/e2e-test-images/agnhost:2.63.0) with no internet: one
// pod serves netexec, a second one's agnhost connect reaches it and
// succeeds, and netexec answers with its pod's hostname.
func TestAgnhostOnContainerd(t *testing.T) {
	c := startRealCluster(t, 1, func(h *crictrd.HostConfig) { h.E2EImages = true })
	c.kubectl(t, "run", "netexec", "--image="+images.Agnhost, "--labels=app=netexec", "--port=8080", "--",
		"netexec", "--http-port=8080")
	pods := c.waitPods(t, "app=netexec", 3*time.Minute, "netexec Ready", func(ps []corev1.Pod) bool {
		return len(ps) == 1 && ready(ps[0])
	})
	ip := pods[0].Status.PodIP
	// Ready without a readiness probe means started, not yet listening:
	// netexec may refuse a connection for a moment (ci33).
	var got string
	waittest.Eventually(t, "netexec to answer on its port", 30*time.Second, func() (bool, string) {
		var err error
		got, err = c.tryKubectl("exec", "netexec", "--", "wget", "-qO-", "http://127.0.0.1:8080/hostname")
		return err == nil, fmt.Sprintf("%v: %s", err, got)
	})
	if strings.TrimSpace(got) != "netexec" {
		t.Errorf("netexec's /hostname answered %q, want netexec", got)
	}
	c.kubectl(t, "run", "connect", "--image="+images.Agnhost, "--labels=app=connect", "--restart=Never", "--",
		"connect", ip+":8080", "--timeout=10s")
	done := c.waitPods(t, "app=connect", 2*time.Minute, "agnhost connect to finish", func(ps []corev1.Pod) bool {
		return len(ps) == 1 && (ps[0].Status.Phase == corev1.PodSucceeded || ps[0].Status.Phase == corev1.PodFailed)
	})
	if done[0].Status.Phase != corev1.PodSucceeded {
		t.Errorf("agnhost connect %s:8080 ended %s; logs:\n%s", ip, done[0].Status.Phase, c.kubectl(t, "logs", "connect"))
	}
	if v := c.kubectl(t, "get", "pod", "netexec", "-o", "jsonpath={.status.containerStatuses[0].image}"); v != images.Agnhost {
		t.Errorf("netexec runs image %q, want %s", v, images.Agnhost)
	}
}
