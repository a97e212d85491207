package cri

import (
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	kubeletevents "k8s.io/kubernetes/pkg/kubelet/events"
	kubeletutil "k8s.io/kubernetes/pkg/kubelet/util"

	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

// Tracker wraps the kubelet's pod startup latency tracker: the first time
// the kubelet sees a pod on its watch, the pod's kubelet stage begins
// (admission, pod directories, volumes); RunPodSandbox ends it.
func (h *Hooks) Tracker(inner kubeletutil.PodStartupLatencyTracker) kubeletutil.PodStartupLatencyTracker {
	return &tracker{PodStartupLatencyTracker: inner, h: h}
}

type tracker struct {
	kubeletutil.PodStartupLatencyTracker
	h *Hooks
}

// ObservedPodOnWatch begins the kubelet stage of a pod the kubelet has not seen.
func (t *tracker) ObservedPodOnWatch(pod *v1.Pod, when time.Time) {
	t.PodStartupLatencyTracker.ObservedPodOnWatch(pod, when)
	h := t.h
	uid := string(pod.UID)
	h.mu.Lock()
	h.ports[uid] = extraPorts(pod)
	h.postStart[uid] = postStartHooks(pod)
	_, seen := h.kubelet[uid]
	if pod.DeletionTimestamp != nil || pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		h.ending[uid] = true
		seen = true
	}
	if !seen {
		h.kubelet[uid] = nil // claimed: the span follows
	}
	h.mu.Unlock()
	if seen {
		return
	}
	ref := trace.Ref{Kind: stages.KindPod, Namespace: pod.Namespace, Name: pod.Name, UID: uid, Node: h.node}
	// The kubelet hears of the binding as soon as etcd has it, often before
	// the scheduler has reported bind's end: the readers put that first
	// (engine/trace), the kubelet never waits for it.
	span := h.tr.Begin(ref, stages.Kubelet, Component)
	h.mu.Lock()
	if h.kubelet[uid] == nil { // not ended meanwhile
		h.kubelet[uid] = span
	}
	h.mu.Unlock()
}

// ended marks a pod whose kubelet stage has ended.
var ended = &trace.Span{}

// isEnding reports whether the pod is being deleted or has finished: then
// stopping its containers and sandbox is its way down (terminate, cleanup),
// not a restart.
func (h *Hooks) isEnding(uid string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ending[uid]
}

// endKubelet ends the pod's kubelet stage, if it is open.
func (h *Hooks) endKubelet(uid, message string) {
	h.mu.Lock()
	span := h.kubelet[uid]
	h.kubelet[uid] = ended
	h.mu.Unlock()
	if span != nil && span != ended {
		span.Succeed("", message)
	}
}

// OnEvent turns the kubelet's Events that no CRI call shows into stages:
// a volume that cannot mount (kubelet), an image refused before any pull
// (pull), the back-offs (pull, start) and failing probes (ready).
func (h *Hooks) OnEvent(e *v1.Event) {
	o := e.InvolvedObject
	if o.Kind != "Pod" {
		return
	}
	ref := trace.Ref{Kind: stages.KindPod, Namespace: o.Namespace, Name: o.Name, UID: string(o.UID), Node: h.node}
	now := h.tr.Clock().Now()
	container := containerOf(o.FieldPath)
	record := func(stage stages.ID, status stages.Status, reason string) {
		h.tr.Record(ref, stage, Component, now, now, status, reason, e.Message, func(ev *stages.Event) { ev.Container = container })
	}
	switch {
	case e.Reason == kubeletevents.FailedMountVolume:
		h.mu.Lock()
		span := h.kubelet[ref.UID]
		open := span != nil && span != ended
		if open {
			h.kubelet[ref.UID] = h.tr.Begin(ref, stages.Kubelet, Component)
		}
		h.mu.Unlock()
		if open {
			span.Retry(e.Reason, e.Message, time.Time{})
		}
	case e.Reason == kubeletevents.FailedToInspectImage: // the image reference does not parse
		record(stages.Pull, stages.Failed, "InvalidImageName")
	case e.Reason == kubeletevents.ErrImageNeverPullPolicy:
		record(stages.Pull, stages.Failed, e.Reason)
	case e.Reason == kubeletevents.BackOffPullImage && strings.HasPrefix(e.Message, "Back-off pulling image"):
		record(stages.Pull, stages.Retrying, "ImagePullBackOff")
	case e.Reason == kubeletevents.BackOffStartContainer && strings.HasPrefix(e.Message, "Back-off restarting failed container"):
		record(stages.Start, stages.Retrying, "CrashLoopBackOff")
	case e.Reason == kubeletevents.ContainerUnhealthy:
		record(stages.Ready, stages.Retrying, e.Reason)
	}
}

// containerOf returns the container a field path such as
// "spec.containers{web}" names, or "".
func containerOf(fieldPath string) string {
	_, rest, ok := strings.Cut(fieldPath, "{")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "}")
	return name
}

// SetNotReady makes the runtime report its network not ready (true), as a
// CNI plugin that is not initialized does: the kubelet then reports its
// Node NotReady, and the node lifecycle controller taints it. false undoes it.
func (h *Hooks) SetNotReady(notReady bool) { h.notReady.Store(notReady) }

// NotReady reports whether SetNotReady(true) is in effect.
func (h *Hooks) NotReady() bool { return h.notReady.Load() }

// NodeName returns the node the runtime belongs to.
func (h *Hooks) NodeName() string { return h.node }

// postStartHooks says, for each container of pod that runs lifecycle
// hooks (the regular ones and restartable init containers, the sidecars),
// whether it has a postStart hook.
func postStartHooks(pod *v1.Pod) map[string]bool {
	out := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			out[c.Name] = c.Lifecycle != nil && c.Lifecycle.PostStart != nil
		}
	}
	for _, c := range pod.Spec.Containers {
		out[c.Name] = c.Lifecycle != nil && c.Lifecycle.PostStart != nil
	}
	return out
}

// noPostStart reports the hooks stage of a started container that has no
// postStart hook as done at once, as the kubelet goes straight on to its
// probes, so its lane has no gap; a container with one reports it from
// the hook's ExecSync.
func (h *Hooks) noPostStart(ref trace.Ref, name string, attempt int) {
	h.mu.Lock()
	has, runsHooks := h.postStart[ref.UID][name]
	h.mu.Unlock()
	if runsHooks && !has {
		h.tr.BeginWithAt(ref, stages.Hooks, Component, h.tr.Clock().Now(), withContainer(name, attempt)).Succeed("", "no postStart hook")
	}
}

// ReportReady makes the interposer report the ready stage itself, from the
// kubelet's own pod status writes: for a kubelet whose API server has no
// podtrace seam to see them (podtrace agent). Call it before the kubelet
// starts.
func (h *Hooks) ReportReady() { h.reportReady = true }

// RecordStatusUpdated sees each pod status the kubelet's status manager
// wrote; with ReportReady, a change of the pod's Ready condition ends the
// ready stage (True) or sends it back to retrying (False, with the
// kubelet's ContainersNotReady reason), as the API server's seam does.
func (t *tracker) RecordStatusUpdated(pod *v1.Pod) {
	t.PodStartupLatencyTracker.RecordStatusUpdated(pod)
	h := t.h
	if !h.reportReady {
		return
	}
	var ready, containers *v1.PodCondition
	for i, c := range pod.Status.Conditions {
		switch c.Type {
		case v1.PodReady:
			ready = &pod.Status.Conditions[i]
		case v1.ContainersReady:
			containers = &pod.Status.Conditions[i]
		}
	}
	if ready == nil {
		return
	}
	uid := string(pod.UID)
	is := ready.Status == v1.ConditionTrue
	h.mu.Lock()
	was := h.ready[uid]
	h.ready[uid] = is
	h.mu.Unlock()
	ref := trace.Ref{Kind: stages.KindPod, Namespace: pod.Namespace, Name: pod.Name, UID: uid, Node: h.node}
	now := h.tr.Clock().Now()
	switch {
	case is && !was:
		var start time.Time // the last container's start: the stage spans its probes
		for _, c := range pod.Status.ContainerStatuses {
			if r := c.State.Running; r != nil && r.StartedAt.After(start) {
				start = r.StartedAt.Time
			}
		}
		h.tr.Record(ref, stages.Ready, Component, h.tr.ReadySince(ref, start, now), now, stages.Succeeded, "", "Ready=True: every container is ready", nil)
	case !is && was:
		reason, msg := ready.Reason, ready.Message
		if containers != nil && containers.Status != v1.ConditionTrue {
			reason, msg = containers.Reason, containers.Message
		}
		h.tr.Record(ref, stages.Ready, Component, now, now, stages.Retrying, reason, "Ready=False: "+msg, nil)
	}
}
