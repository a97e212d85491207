package kubelet

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/engine/kubelet/network"
	"github.com/podtrace/podtrace/engine/kubelet/runtime"
	"github.com/podtrace/podtrace/engine/kubelet/status"
	"github.com/podtrace/podtrace/stages"
)

// sync does the next steps for the pod (like SyncPod: admit, sandbox,
// network, init containers one at a time, then containers and probes) and
// returns when the worker should sync again on its own (zero: only when
// something changes).
func (w *podWorker) sync(ctx context.Context, pod *v1.Pod) time.Time {
	s := &w.s
	if s.terminal || s.rejected != nil {
		return time.Time{}
	}
	if !s.volumesReady {
		if next, ok := w.syncKubelet(ctx, pod); !ok {
			return next
		}
	}
	if s.sandboxID == "" {
		if now := w.k.clock.Now(); now.Before(s.sandboxNext) {
			return s.sandboxNext
		}
		if !w.syncSandbox(ctx, pod) {
			return s.sandboxNext
		}
		w.publishSoon(pod)
	}
	w.refresh(ctx)

	for _, c := range s.init {
		if c.cur != nil && c.cur.State == runtime.StateExited && c.cur.ExitCode == 0 && c.waitReason == "" {
			continue // done
		}
		if c.cur != nil && c.cur.State == runtime.StateRunning {
			w.publish(pod)
			return time.Time{} // wait for it to exit
		}
		if c.cur != nil && c.cur.State == runtime.StateExited && pod.Spec.RestartPolicy == v1.RestartPolicyNever {
			w.finish(ctx, pod) // a failed init container fails the pod
			return time.Time{}
		}
		next, _ := w.startContainer(ctx, pod, c)
		w.publish(pod)
		return next
	}

	var next time.Time
	soonest := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for _, c := range s.regular {
		if ctx.Err() != nil {
			return time.Time{}
		}
		switch {
		case c.cur != nil && c.cur.State == runtime.StateRunning:
			soonest(w.probe(ctx, pod, c))
		case c.cur != nil && c.cur.State == runtime.StateExited && !shouldRestart(pod.Spec.RestartPolicy, c.cur.ExitCode):
			// finished for good
		default:
			t, ok := w.startContainer(ctx, pod, c)
			soonest(t)
			if ok {
				soonest(w.probe(ctx, pod, c))
			}
		}
	}
	st := w.buildStatus(pod)
	if st.Phase == v1.PodSucceeded || st.Phase == v1.PodFailed {
		w.finish(ctx, pod)
		return time.Time{}
	}
	w.setStatus(pod, st)
	return next
}

func shouldRestart(policy v1.RestartPolicy, exitCode int) bool {
	switch policy {
	case v1.RestartPolicyNever:
		return false
	case v1.RestartPolicyOnFailure:
		return exitCode != 0
	}
	return true
}

// finish ends a pod whose phase is terminal: its sandbox is stopped and its
// address released, as syncTerminatedPod does, and the final status written.
func (w *podWorker) finish(ctx context.Context, pod *v1.Pod) {
	s := &w.s
	s.terminal = true
	if s.sandboxID != "" {
		_ = w.k.net.TearDown(ctx, network.Pod{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID), SandboxID: s.sandboxID})
		_ = w.k.rt.StopPodSandbox(ctx, s.sandboxID)
		s.sandboxReady = false
	}
	w.publish(pod)
	w.setFinished()
}

// refresh reads the runtime state of every current container instance and
// handles exits: readiness drops, a ready span still open is closed.
func (w *podWorker) refresh(ctx context.Context) {
	for _, c := range append(append([]*ctr{}, w.s.init...), w.s.regular...) {
		if c.id == "" {
			continue
		}
		st, err := w.k.rt.ContainerStatus(ctx, c.id)
		if err != nil {
			continue
		}
		c.cur = &st
		if st.State == runtime.StateExited && !c.exitHandled.Equal(st.FinishedAt) {
			c.exitHandled = st.FinishedAt
			c.ready, c.started = false, false
			if c.readySpan != nil {
				c.readySpan.Retry("ContainerExited", fmt.Sprintf("container %s exited with code %d (%s)", c.spec.Name, st.ExitCode, st.Reason), time.Time{})
				c.readySpan = nil
			}
		}
	}
}

// syncKubelet is the kubelet stage: admission, QoS and cgroup, pod
// directories, volumes and image pull secrets. It returns false with the
// next try when the pod cannot go on yet.
func (w *podWorker) syncKubelet(ctx context.Context, pod *v1.Pod) (time.Time, bool) {
	s := &w.s
	now := w.k.clock.Now()
	if now.Before(s.volumeNext) {
		return s.volumeNext, false
	}
	span := w.begin(pod, stages.Kubelet, nil)
	fault, err := w.k.tracer.Gate(ctx, w.ref(pod), stages.Kubelet, Component)
	if err != nil {
		return time.Time{}, false
	}
	if s.startTime == nil {
		t := metav1.NewTime(w.k.clock.Now())
		s.startTime = &t
	}
	if !s.admitted {
		if reason, msg, ok := w.k.admit(pod); !ok {
			w.podEvent(pod, v1.EventTypeWarning, reason, "%s", msg)
			s.rejected = &v1.PodStatus{Phase: v1.PodFailed, Reason: reason, Message: "Pod was rejected: " + msg,
				StartTime: s.startTime, Conditions: pod.Status.Conditions, ObservedGeneration: pod.Generation}
			span.Fail(reason, msg)
			w.setStatus(pod, *s.rejected)
			w.setFinished()
			return time.Time{}, false
		}
		s.admitted = true
		s.qos = status.QOSClass(pod)
		s.cgroup = status.CgroupPath(s.qos, string(pod.UID))
	}
	if fault != nil && fault.Variant == "node-not-ready" {
		// The node's network is down for this pod: retried every second.
		msg := "network is not ready: " + networkNotReadyMessage
		w.podEvent(pod, v1.EventTypeWarning, "NetworkNotReady", "%s", msg)
		s.volumeNext = w.k.clock.Now().Add(time.Second)
		span.Retry("NetworkNotReady", msg, s.volumeNext)
		w.publish(pod)
		return s.volumeNext, false
	}
	msg, err := w.k.mountVolumes(ctx, pod)
	if err == nil && fault != nil {
		msg, err = kubeletFault(*fault, pod)
	}
	if err != nil {
		if s.volumeDelay == 0 {
			s.volumeDelay = VolumeBackOffInitial
		} else {
			s.volumeDelay = min(2*s.volumeDelay, VolumeBackOffMax)
		}
		s.volumeNext = w.k.clock.Now().Add(s.volumeDelay)
		w.podEvent(pod, v1.EventTypeWarning, "FailedMount", "%s", err.Error())
		span.Retry("FailedMount", err.Error(), s.volumeNext)
		w.publish(pod)
		return s.volumeNext, false
	}
	s.volumesReady = true
	s.auth = w.k.pullSecrets(ctx, pod, w)
	span.Succeed("", fmt.Sprintf("admitted; QoS class %s, cgroup %s, pod dir /var/lib/kubelet/pods/%s; %s", s.qos, s.cgroup, pod.UID, msg))
	return time.Time{}, true
}

// syncSandbox runs the sandbox and network stages.
func (w *podWorker) syncSandbox(ctx context.Context, pod *v1.Pod) bool {
	s := &w.s
	retry := func(span interface {
		Retry(string, string, time.Time)
	}, msg string) bool {
		s.sandboxNext = w.k.clock.Now().Add(SyncBackOffPeriod)
		w.podEvent(pod, v1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %s", msg)
		span.Retry("FailedCreatePodSandBox", "Failed to create pod sandbox: "+msg, s.sandboxNext)
		return false
	}
	span := w.begin(pod, stages.Sandbox, nil)
	fault, err := w.k.tracer.Gate(ctx, w.ref(pod), stages.Sandbox, Component)
	if err != nil {
		return false
	}
	if w.k.notReady.Load() {
		// The node's runtime network is down (SetNotReady): no sandbox can
		// get a network, and the kubelet retries after a second.
		msg := "network is not ready: " + networkNotReadyMessage
		w.podEvent(pod, v1.EventTypeWarning, "NetworkNotReady", "%s", msg)
		s.sandboxNext = w.k.clock.Now().Add(time.Second)
		span.Retry("NetworkNotReady", msg, s.sandboxNext)
		return false
	}
	if fault != nil {
		return retry(span, sandboxFault(*fault))
	}
	id, err := w.k.rt.RunPodSandbox(ctx, runtime.SandboxConfig{Name: pod.Name, Namespace: pod.Namespace, UID: string(pod.UID),
		Attempt: s.sandboxTries, Hostname: pod.Name, CgroupParent: s.cgroup, Annotations: pod.Annotations})
	s.sandboxTries++
	if err != nil {
		if ctx.Err() != nil {
			return false
		}
		return retry(span, err.Error())
	}
	span.Succeed("", fmt.Sprintf("sandbox %s running (pause container)", short(id)))

	span = w.begin(pod, stages.CNI, nil)
	fault, err = w.k.tracer.Gate(ctx, w.ref(pod), stages.CNI, Component)
	var res network.Result
	if err == nil && fault != nil {
		err = cniFault(*fault, w.k)
		if sf, ok := w.k.net.(setUpFaulter); ok {
			err = sf.SetUpFault(ctx, network.Pod{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID), SandboxID: id}, fault.Variant)
		}
	}
	if err == nil {
		res, err = w.k.net.SetUp(ctx, network.Pod{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID), SandboxID: id})
	}
	if err != nil {
		_ = w.k.rt.RemovePodSandbox(context.WithoutCancel(ctx), id)
		if ctx.Err() != nil {
			return false
		}
		return retry(span, fmt.Sprintf("rpc error: code = Unknown desc = failed to setup network for sandbox %q: %v", id, err))
	}
	s.sandboxID, s.podIP, s.sandboxReady = id, res.IP, true
	span.Succeed("", fmt.Sprintf("%s %s via %s (host side %s)", res.Interface, res.IP, res.Gateway, res.HostVeth))
	return true
}

func short(id string) string {
	if len(id) > 13 {
		return id[:13]
	}
	return id
}
