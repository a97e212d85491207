package kubelet

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	rtsim "github.com/podtrace/podtrace/engine/kubelet/runtime/sim"
)

// TestSameSeedSameEvents runs the same pods twice with the same seed and
// default latencies: the stage events (apart from times) are identical.
func TestSameSeedSameEvents(t *testing.T) {
	durations := regexp.MustCompile(`[0-9.]+(ms|s|µs)`)
	run := func() string {
		lat := rtsim.DefaultLatency
		env := startKubelet(t, 100, &lat)
		env.create(t, newPod("a", v1.Container{Name: "web", Image: "nginx:1.27"}))
		env.waitFor(t, "a", "Ready", isReady)
		env.create(t, newPod("b", v1.Container{Name: "cache", Image: "redis:7"}))
		env.waitFor(t, "b", "Ready", isReady)
		var lines []string
		for _, e := range append(env.events.forPod("a"), env.events.forPod("b")...) {
			lines = append(lines, fmt.Sprintf("%s %s %s %s %d %s %s", e.Pod, e.Stage, e.Container, e.Status, e.Attempt, e.Reason, durations.ReplaceAllString(e.Message, "D")))
		}
		return strings.Join(lines, "\n")
	}
	first, second := run(), run()
	if first != second {
		t.Fatalf("runs differ:\n%s\n---\n%s", first, second)
	}
	if !strings.Contains(first, "sandbox") || !strings.Contains(first, `Successfully pulled image "redis:7"`) {
		t.Fatalf("unexpected events:\n%s", first)
	}
}

// TestFewStatusWritesPerPod checks the status manager's coalescing: with
// zero runtime latency a pod's way to Ready costs at most three writes.
func TestFewStatusWritesPerPod(t *testing.T) {
	env := startKubelet(t, 1, nil)
	const n = 20
	for i := 0; i < n; i++ {
		env.create(t, newPod(fmt.Sprintf("p%d", i), v1.Container{Name: "c", Image: "registry.k8s.io/pause:3.10"}))
	}
	for i := 0; i < n; i++ {
		env.waitFor(t, fmt.Sprintf("p%d", i), "Ready", isReady)
	}
	time.Sleep(50 * time.Millisecond) // let trailing writes land
	if w := env.k.StatusWrites(); w > 3*n {
		t.Fatalf("%d status writes for %d pods (%.1f per pod), want at most 3 per pod", w, n, float64(w)/n)
	} else {
		t.Logf("%.1f status writes per pod", float64(w)/n)
	}
}

func TestLivenessRestartsAndReadinessUnhealthy(t *testing.T) {
	env := startKubelet(t, 200, nil)
	env.create(t, newPod("sick", v1.Container{
		Name: "app", Image: "busybox:1.36",
		Command: []string{"sh", "-c", "touch /tmp/healthy; sleep 30; rm -f /tmp/healthy; sleep 600"},
		LivenessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"cat", "/tmp/healthy"}}},
			InitialDelaySeconds: 5, PeriodSeconds: 5},
		ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(8080)}},
			PeriodSeconds: 10},
	}))
	env.waitFor(t, "sick", "restarted by its liveness probe", func(p *v1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 1
	})
	msgs := map[string]bool{}
	for _, ev := range env.kubeEvents(t, "Unhealthy", "Killing") {
		msgs[ev.Reason+": "+ev.Message] = true
	}
	for _, want := range []string{
		"Unhealthy: Liveness probe failed: cat: can't open '/tmp/healthy': No such file or directory",
		"Killing: Container app failed liveness probe, will be restarted",
		`Unhealthy: Readiness probe failed: Get "http://10.244.1.2:8080/ready": dial tcp 10.244.1.2:8080: connect: connection refused`,
	} {
		if !msgs[want] {
			t.Errorf("missing event %q; have %v", want, msgs)
		}
	}
}
