package kubelet

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podtrace/podtrace/engine/kubelet/runtime"
	"github.com/podtrace/podtrace/engine/kubelet/status"
	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

// podWorker owns one pod, like the kubelet's pod_workers.go: one goroutine
// syncs it whenever it changes, a container changes state, or a timer it
// asked for (a back-off, a probe) fires.
type podWorker struct {
	k   *Kubelet
	uid types.UID

	mu             sync.Mutex
	pod            *v1.Pod
	removed        bool
	cancelSync     context.CancelFunc
	finished       bool                 // terminal or terminated: holds no resources
	terminatedDone bool                 // terminate and cleanup ran
	ids            map[string][2]string // container name → current and previous instance IDs
	wakeCh         chan struct{}
	published      atomic.Int64 // counts statuses published, to drop superseded delayed ones
	pubMu          sync.Mutex   // orders a delayed status against newer ones

	// Owned by the worker goroutine.
	s podState
}

// podState is what the worker knows of its pod between syncs.
type podState struct {
	attempts     map[string]int // per stage (and container) attempt counters
	admitted     bool
	rejected     *v1.PodStatus
	volumesReady bool
	volumeNext   time.Time
	volumeDelay  time.Duration
	auth         *runtime.AuthConfig
	qos          v1.PodQOSClass
	cgroup       string
	startTime    *metav1.Time
	sandboxID    string
	sandboxTries int
	sandboxNext  time.Time
	sandboxReady bool
	podIP        string
	init         []*ctr
	regular      []*ctr
	terminal     bool
}

// ctr is one container of the pod and the instances the runtime ran for it.
type ctr struct {
	spec     v1.Container
	init     bool
	id       string                   // the current instance
	prevID   string                   // the instance before, kept for its logs
	cur      *runtime.ContainerStatus // its last known state
	restarts int32
	imageRef string // normalized reference pulled
	imageID  string
	// waiting reason and message while no instance runs.
	waitReason, waitMsg string
	lastTerm            *v1.ContainerStateTerminated // the instance before cur
	started, ready      bool
	pullRetryAt         time.Time
	pullErr             string
	backOffShown        time.Time // finish time whose back-off was reported
	exitHandled         time.Time // finish time already handled
	readySpan           *trace.Span
	probes              probeState
	startedAt           time.Time
}

func newPodWorker(k *Kubelet, pod *v1.Pod) *podWorker {
	w := &podWorker{k: k, uid: pod.UID, pod: pod, wakeCh: make(chan struct{}, 1)}
	w.s.attempts = map[string]int{}
	for _, c := range pod.Spec.InitContainers {
		w.s.init = append(w.s.init, &ctr{spec: c, init: true})
	}
	for _, c := range pod.Spec.Containers {
		w.s.regular = append(w.s.regular, &ctr{spec: c})
	}
	return w
}

func (w *podWorker) setLogIDs(name, cur, prev string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ids == nil {
		w.ids = map[string][2]string{}
	}
	w.ids[name] = [2]string{cur, prev}
}

func (w *podWorker) logIDs(name string) [2]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ids[name]
}

func (w *podWorker) wake() {
	select {
	case w.wakeCh <- struct{}{}:
	default:
	}
}

func (w *podWorker) update(pod *v1.Pod) {
	w.mu.Lock()
	w.pod = pod
	if pod.DeletionTimestamp != nil && w.cancelSync != nil {
		w.cancelSync()
	}
	w.mu.Unlock()
	w.wake()
}

func (w *podWorker) remove() {
	w.mu.Lock()
	w.removed = true
	if w.cancelSync != nil {
		w.cancelSync()
	}
	w.mu.Unlock()
	w.wake()
}

func (w *podWorker) currentPod() *v1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pod
}

// holdsResources reports whether the pod counts against the node's allocatable.
func (w *podWorker) holdsResources() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.finished && w.pod.Status.Phase != v1.PodSucceeded && w.pod.Status.Phase != v1.PodFailed
}

// isTerminated reports whether the worker took the pod down (terminate ran).
func (w *podWorker) isTerminated() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.terminatedDone && !w.removed // a removed pod's object is already gone
}

func (w *podWorker) setFinished() {
	w.mu.Lock()
	w.finished = true
	w.mu.Unlock()
}

func (w *podWorker) ref(pod *v1.Pod) trace.Ref {
	return trace.Ref{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID), Node: w.k.cfg.NodeName}
}

// begin opens a span for stage, counting attempts per stage and container.
func (w *podWorker) begin(pod *v1.Pod, stage stages.ID, c *ctr) *trace.Span {
	key := string(stage)
	name := ""
	if c != nil {
		name = c.spec.Name
		key += "/" + name
	}
	w.s.attempts[key]++
	n := w.s.attempts[key]
	return w.k.tracer.BeginWith(w.ref(pod), stage, Component, func(e *stages.Event) {
		e.Container, e.Attempt = name, n
	})
}

// run syncs the pod until it is deleted.
func (w *podWorker) run(ctx context.Context) {
	defer w.k.forget(w)
	for {
		w.mu.Lock()
		pod, removed := w.pod, w.removed
		w.mu.Unlock()
		if removed || pod.DeletionTimestamp != nil {
			w.terminate(ctx, pod, removed)
			return
		}
		sctx, cancel := context.WithCancel(ctx)
		w.mu.Lock()
		w.cancelSync = cancel
		w.mu.Unlock()
		next := w.sync(sctx, pod)
		w.mu.Lock()
		w.cancelSync = nil
		w.mu.Unlock()
		cancel()
		if ctx.Err() != nil {
			return
		}
		var timer <-chan time.Time
		stop := func() bool { return false }
		if !next.IsZero() {
			t := w.k.clock.NewTimer(max(next.Sub(w.k.clock.Now()), 0))
			timer, stop = t.C(), t.Stop
		}
		select {
		case <-w.wakeCh:
		case <-timer:
		case <-ctx.Done():
			stop()
			return
		}
		stop()
	}
}

// publish hands the pod's current status to the status manager.
func (w *podWorker) publish(pod *v1.Pod) {
	w.setStatus(pod, w.buildStatus(pod))
}

// setStatus hands st to the status manager, superseding any delayed status.
func (w *podWorker) setStatus(pod *v1.Pod, st v1.PodStatus) {
	w.pubMu.Lock()
	defer w.pubMu.Unlock()
	w.published.Add(1)
	w.k.status.SetPodStatus(pod, st)
}

// PublishDelay is how long an intermediate status must stay current (in
// engine time) before it is written: with a fast runtime a pod's way to
// Ready then costs one or two writes instead of one per step.
const PublishDelay = 100 * time.Millisecond

// publishSoon writes the pod's current status if no other status was
// published within PublishDelay.
func (w *podWorker) publishSoon(pod *v1.Pod) {
	st := w.buildStatus(pod)
	w.pubMu.Lock()
	gen := w.published.Add(1)
	w.pubMu.Unlock()
	t := w.k.clock.NewTimer(PublishDelay)
	go func() {
		defer t.Stop()
		select {
		case <-t.C():
			w.pubMu.Lock()
			if w.published.Load() == gen {
				w.k.status.SetPodStatus(pod, st)
			}
			w.pubMu.Unlock()
		case <-w.k.ctx.Done():
		}
	}()
}

func (w *podWorker) buildStatus(pod *v1.Pod) v1.PodStatus {
	if w.s.rejected != nil {
		return *w.s.rejected
	}
	initPending := false
	var initSt, regSt []v1.ContainerStatus
	for _, c := range w.s.init {
		cs := w.containerStatus(c, "PodInitializing")
		initSt = append(initSt, cs)
		if cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 {
			initPending = true
		}
	}
	def := "ContainerCreating"
	if initPending {
		def = "PodInitializing"
	}
	for _, c := range w.s.regular {
		regSt = append(regSt, w.containerStatus(c, def))
	}
	phase := status.Phase(&pod.Spec, initSt, regSt)
	st := v1.PodStatus{
		Phase:                 phase,
		HostIP:                w.k.cfg.InternalIP,
		HostIPs:               []v1.HostIP{{IP: w.k.cfg.InternalIP}},
		StartTime:             w.s.startTime,
		QOSClass:              w.s.qos,
		InitContainerStatuses: initSt,
		ContainerStatuses:     regSt,
	}
	if w.s.podIP != "" {
		st.PodIP, st.PodIPs = w.s.podIP, []v1.PodIP{{IP: w.s.podIP}}
	}
	st.Conditions = status.Conditions(pod, phase, w.s.sandboxReady, initSt, regSt)
	status.StampTransitions(pod.Status.Conditions, st.Conditions, w.k.clock.Now())
	// PodObservedGenerationTracking is GA: the kubelet stamps the generation it acted on.
	st.ObservedGeneration = pod.Generation
	for i := range st.Conditions {
		if st.Conditions[i].Type != v1.PodScheduled {
			st.Conditions[i].ObservedGeneration = pod.Generation
		}
	}
	return st
}

// containerStatus renders c as the API shows it; def is the waiting reason
// used before any instance exists.
func (w *podWorker) containerStatus(c *ctr, def string) v1.ContainerStatus {
	started := c.started
	cs := v1.ContainerStatus{Name: c.spec.Name, Image: c.spec.Image, ImageID: c.imageID, RestartCount: c.restarts,
		Ready: c.ready, Started: &started}
	if c.lastTerm != nil {
		cs.LastTerminationState.Terminated = c.lastTerm.DeepCopy()
	}
	if c.id != "" && c.cur != nil {
		cs.ContainerID = w.k.cfg.RuntimeName + "://" + c.id
	}
	switch {
	case c.cur != nil && c.cur.State == runtime.StateRunning && c.waitReason == "":
		cs.State.Running = &v1.ContainerStateRunning{StartedAt: metav1.NewTime(c.cur.StartedAt)}
	case c.cur != nil && c.cur.State == runtime.StateExited && c.waitReason != "":
		cs.State.Waiting = &v1.ContainerStateWaiting{Reason: c.waitReason, Message: c.waitMsg}
		cs.LastTerminationState.Terminated = w.terminated(c)
	case c.cur != nil && c.cur.State == runtime.StateExited:
		cs.State.Terminated = w.terminated(c)
		if c.init && cs.State.Terminated.ExitCode == 0 {
			cs.Ready = true
		}
	default:
		reason := def
		if c.waitReason != "" {
			reason = c.waitReason
		}
		cs.State.Waiting = &v1.ContainerStateWaiting{Reason: reason, Message: c.waitMsg}
	}
	return cs
}

func (w *podWorker) terminated(c *ctr) *v1.ContainerStateTerminated {
	return &v1.ContainerStateTerminated{ExitCode: int32(c.cur.ExitCode), Reason: c.cur.Reason, Message: c.cur.Message,
		StartedAt: metav1.NewTime(c.cur.StartedAt), FinishedAt: metav1.NewTime(c.cur.FinishedAt),
		ContainerID: w.k.cfg.RuntimeName + "://" + c.id}
}

// formatPod renders a pod as the kubelet's format.Pod: name_namespace(uid).
func formatPod(pod *v1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// containerRef is the object reference of a container's events.
func containerRef(pod *v1.Pod, c *ctr) *v1.ObjectReference {
	field := fmt.Sprintf("spec.containers{%s}", c.spec.Name)
	if c.init {
		field = fmt.Sprintf("spec.initContainers{%s}", c.spec.Name)
	}
	return &v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name,
		UID: pod.UID, ResourceVersion: pod.ResourceVersion, FieldPath: field}
}

func (w *podWorker) podEvent(pod *v1.Pod, eventtype, reason, format string, args ...any) {
	ref := &v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, ResourceVersion: pod.ResourceVersion}
	w.k.recorder.Eventf(ref, eventtype, reason, format, args...)
}

func (w *podWorker) containerEvent(pod *v1.Pod, c *ctr, eventtype, reason, format string, args ...any) {
	w.k.recorder.Eventf(containerRef(pod, c), eventtype, reason, format, args...)
}
