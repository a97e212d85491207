package kubelet

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podtrace/podtrace/engine/kubelet/runtime"
	"github.com/podtrace/podtrace/stages"
)

// AnnotationHTTPStatus makes simulated HTTP probes and hooks of the pod
// answer with this status code (e.g. "503") instead of 200.
const AnnotationHTTPStatus = "podtrace.dev/http-status"

// probeState tracks one container's probes between syncs.
type probeState struct {
	gated               bool // the ready stage's gate was passed
	faulted             bool // a ready fault holds readiness down
	nextStartup         time.Time
	nextReady, nextLive time.Time
	startupFail         int
	readyOK, readyFail  int
	liveFail            int
}

// probeTiming returns a probe's settings with the API defaults applied.
func probeTiming(p *v1.Probe) (initial, period, timeout time.Duration, success, failure int) {
	initial = time.Duration(p.InitialDelaySeconds) * time.Second
	period, timeout, success, failure = 10*time.Second, time.Second, 1, 3
	if p.PeriodSeconds > 0 {
		period = time.Duration(p.PeriodSeconds) * time.Second
	}
	if p.TimeoutSeconds > 0 {
		timeout = time.Duration(p.TimeoutSeconds) * time.Second
	}
	if p.SuccessThreshold > 0 {
		success = int(p.SuccessThreshold)
	}
	if p.FailureThreshold > 0 {
		failure = int(p.FailureThreshold)
	}
	return
}

// probe runs the container's due probes (startup, then readiness and
// liveness) and returns when the next one is due.
func (w *podWorker) probe(ctx context.Context, pod *v1.Pod, c *ctr) time.Time {
	k := w.k
	ps := &c.probes
	if c.init || c.cur == nil || c.cur.State != runtime.StateRunning {
		return time.Time{}
	}
	if !ps.gated {
		ps.gated = true
		fault, err := k.tracer.Gate(ctx, w.ref(pod), stages.Ready, Component)
		if err != nil {
			return time.Time{}
		}
		ps.faulted = fault != nil
	}
	now := k.clock.Now()
	var next time.Time
	due := func(t *time.Time, p *v1.Probe) bool {
		initial, period, _, _, _ := probeTiming(p)
		if t.IsZero() {
			*t = c.startedAt.Add(initial)
		}
		if now.Before(*t) {
			return false
		}
		*t = now.Add(period)
		return true
	}
	track := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}

	// Startup probe: nothing else runs until it passes.
	if !c.started {
		if p := c.spec.StartupProbe; p != nil {
			if due(&ps.nextStartup, p) {
				_, _, timeout, _, failure := probeTiming(p)
				if out, ok := w.runProbe(ctx, pod, c, p, timeout); ok {
					c.started = true
				} else {
					ps.startupFail++
					w.containerEvent(pod, c, v1.EventTypeWarning, "Unhealthy", "Startup probe failed: %s", out)
					if ps.startupFail >= failure {
						w.kill(ctx, pod, c, fmt.Sprintf("Container %s failed startup probe, will be restarted", c.spec.Name))
						return k.clock.Now()
					}
				}
			}
			if !c.started {
				track(ps.nextStartup)
				return next
			}
		} else {
			c.started = true
		}
	}

	if p := c.spec.LivenessProbe; p != nil {
		if due(&ps.nextLive, p) {
			_, _, timeout, _, failure := probeTiming(p)
			if out, ok := w.runProbe(ctx, pod, c, p, timeout); ok {
				ps.liveFail = 0
			} else {
				ps.liveFail++
				w.containerEvent(pod, c, v1.EventTypeWarning, "Unhealthy", "Liveness probe failed: %s", out)
				if ps.liveFail >= failure {
					w.kill(ctx, pod, c, fmt.Sprintf("Container %s failed liveness probe, will be restarted", c.spec.Name))
					return k.clock.Now()
				}
			}
		}
		track(ps.nextLive)
	}

	wasReady := c.ready
	p := c.spec.ReadinessProbe
	switch {
	case ps.faulted:
		// A ready fault: readiness fails at every period until the fault is removed.
		if p == nil {
			p = &v1.Probe{}
		}
		if due(&ps.nextReady, p) {
			if w.readyFaultActive(pod) {
				c.ready = false
				w.containerEvent(pod, c, v1.EventTypeWarning, "Unhealthy", "Readiness probe failed: %s", "HTTP probe failed with statuscode: 503")
			} else {
				ps.faulted = false
				c.ready = true
			}
		}
		track(ps.nextReady)
	case p == nil:
		c.ready = true
	default:
		if due(&ps.nextReady, p) {
			_, _, timeout, success, failure := probeTiming(p)
			if out, ok := w.runProbe(ctx, pod, c, p, timeout); ok {
				ps.readyFail = 0
				ps.readyOK++
				if ps.readyOK >= success {
					c.ready = true
				}
			} else {
				ps.readyOK = 0
				ps.readyFail++
				w.containerEvent(pod, c, v1.EventTypeWarning, "Unhealthy", "Readiness probe failed: %s", out)
				if ps.readyFail >= failure {
					c.ready = false
				}
			}
		}
		track(ps.nextReady)
	}
	if c.ready && !wasReady && c.readySpan != nil {
		c.readySpan.Succeed("", fmt.Sprintf("container %s is ready", c.spec.Name))
		c.readySpan = nil
	}
	if !c.ready && wasReady && c.readySpan == nil {
		c.readySpan = w.begin(pod, stages.Ready, c)
	}
	return next
}

// readyFaultActive reports whether a fail fault on the ready stage still
// covers the pod.
func (w *podWorker) readyFaultActive(pod *v1.Pod) bool {
	if w.k.tracer == nil || w.k.tracer.Faults == nil {
		return false
	}
	for _, f := range w.k.tracer.Faults.List() {
		if f.Stage == stages.Ready && f.Kind == stages.Fail && f.Scope.Matches(pod.Namespace+"/"+pod.Name, w.k.cfg.NodeName) {
			return true
		}
	}
	return false
}

// kill stops a container for a failed probe; it is then restarted.
func (w *podWorker) kill(ctx context.Context, pod *v1.Pod, c *ctr, msg string) {
	w.containerEvent(pod, c, v1.EventTypeNormal, "Killing", "%s", msg)
	_ = w.k.rt.StopContainer(ctx, c.id, gracePeriod(pod))
	if st, err := w.k.rt.ContainerStatus(ctx, c.id); err == nil {
		c.cur = &st
	}
	w.refresh(ctx)
}

// runProbe runs one probe and returns its failure output.
func (w *podWorker) runProbe(ctx context.Context, pod *v1.Pod, c *ctr, p *v1.Probe, timeout time.Duration) (string, bool) {
	switch {
	case p.Exec != nil:
		res, err := w.k.rt.ExecSync(ctx, c.id, p.Exec.Command, timeout)
		if err != nil {
			return err.Error(), false
		}
		if res.ExitCode != 0 {
			return strings.TrimRight(res.Stdout+res.Stderr, "\n"), false
		}
		return "", true
	case p.HTTPGet != nil:
		if err := w.httpGet(ctx, pod, c, p.HTTPGet, timeout); err != nil {
			return err.Error(), false
		}
		return "", true
	case p.TCPSocket != nil:
		port, ok := w.resolvePort(pod, c, p.TCPSocket.Port)
		if !ok {
			return fmt.Sprintf("dial tcp %s:%s: connect: connection refused", w.s.podIP, p.TCPSocket.Port.String()), false
		}
		_ = port
		return "", true
	case p.GRPC != nil:
		if _, ok := w.resolvePort(pod, c, intstr.FromInt32(p.GRPC.Port)); !ok {
			return fmt.Sprintf("timeout: failed to connect service %q within %v", fmt.Sprintf("%s:%d", w.s.podIP, p.GRPC.Port), timeout), false
		}
		return "", true
	}
	return "", true
}

// resolvePort reports whether something listens on port in the simulated
// pod: a port is open when a running container of the pod declares it.
func (w *podWorker) resolvePort(pod *v1.Pod, c *ctr, port intstr.IntOrString) (int32, bool) {
	for _, o := range w.s.regular {
		if o.cur == nil || o.cur.State != runtime.StateRunning {
			continue
		}
		for _, p := range o.spec.Ports {
			if (port.Type == intstr.String && p.Name == port.StrVal) || (port.Type == intstr.Int && p.ContainerPort == port.IntVal) {
				return p.ContainerPort, true
			}
		}
	}
	if port.Type == intstr.Int {
		return port.IntVal, false
	}
	return 0, false
}

// httpGet simulates an HTTP GET against the pod: refused when no running
// container declares the port, else the status of AnnotationHTTPStatus (200
// by default); 400 and above fail as the kubelet's prober reports it.
func (w *podWorker) httpGet(ctx context.Context, pod *v1.Pod, c *ctr, h *v1.HTTPGetAction, timeout time.Duration) error {
	host := w.s.podIP
	if h.Host != "" {
		host = h.Host
	}
	scheme := strings.ToLower(string(h.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	port, ok := w.resolvePort(pod, c, h.Port)
	if !ok {
		p := h.Port.String()
		if port != 0 {
			p = fmt.Sprint(port)
		}
		return fmt.Errorf("Get %q: dial tcp %s:%s: connect: connection refused", fmt.Sprintf("%s://%s:%s%s", scheme, host, p, h.Path), host, p) //nolint:staticcheck // upstream wording
	}
	if err, real := w.realHTTPGet(ctx, fmt.Sprintf("%s://%s:%d%s", scheme, host, port, h.Path), timeout); real {
		return err
	}
	if code := pod.Annotations[AnnotationHTTPStatus]; code != "" && code >= "400" {
		return fmt.Errorf("HTTP probe failed with statuscode: %s", code)
	}
	return nil
}
