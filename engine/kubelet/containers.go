package kubelet

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/engine/kubelet/images"
	"github.com/podtrace/podtrace/engine/kubelet/runtime"
	"github.com/podtrace/podtrace/stages"
)

// startContainer takes c through crash back-off, pull, create, start and
// its postStart hook. It returns false, with when to try again, when the
// container did not start.
func (w *podWorker) startContainer(ctx context.Context, pod *v1.Pod, c *ctr) (time.Time, bool) {
	if c.cur != nil && c.cur.State == runtime.StateExited {
		if next, wait := w.crashBackOff(pod, c); wait {
			return next, false
		}
	}
	if next, ok := w.pull(ctx, pod, c); !ok {
		return next, false
	}
	if c.cur != nil && c.cur.State == runtime.StateExited {
		// A restart: the exited instance becomes the last termination.
		c.lastTerm = w.terminated(c)
		// Keep the exited instance (for logs --previous); remove the one before.
		if prev := w.logIDs(c.spec.Name)[1]; prev != "" {
			_ = w.k.rt.RemoveContainer(ctx, prev)
		}
		c.restarts++
		c.prevID, c.id, c.cur = c.id, "", nil
	}
	if next, ok := w.create(ctx, pod, c); !ok {
		return next, false
	}
	if next, ok := w.start(ctx, pod, c); !ok {
		return next, false
	}
	return w.postStart(ctx, pod, c)
}

// crashBackOff applies the kubelet's doBackOff: a container that exited is
// restarted at once the first time, then after 10 s, 20 s, 40 s … 5 min.
func (w *podWorker) crashBackOff(pod *v1.Pod, c *ctr) (time.Time, bool) {
	key := fmt.Sprintf("%s_%s_%s_%s", pod.Name, pod.Namespace, pod.UID, c.spec.Name)
	ts := c.cur.FinishedAt
	bo := w.k.crashBackOff
	if bo.IsInBackOffSince(key, ts) {
		d := bo.Get(key)
		next := ts.Add(d)
		msg := fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", d, c.spec.Name, formatPod(pod))
		c.waitReason, c.waitMsg = "CrashLoopBackOff", msg
		if !c.backOffShown.Equal(ts) {
			c.backOffShown = ts
			w.containerEvent(pod, c, v1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s", c.spec.Name, formatPod(pod))
			span := w.begin(pod, stages.Start, c)
			span.Retry("CrashLoopBackOff", msg, next)
		}
		return next, true
	}
	bo.Next(key, ts)
	return time.Time{}, false
}

// pullPolicy returns the container's policy, defaulted as the API server does.
func pullPolicy(c v1.Container, ref images.Reference) v1.PullPolicy {
	if c.ImagePullPolicy != "" {
		return c.ImagePullPolicy
	}
	if ref.Digest == "" && ref.Tag == "latest" {
		return v1.PullAlways
	}
	return v1.PullIfNotPresent
}

// pull is the pull stage, following the kubelet's image manager.
func (w *podWorker) pull(ctx context.Context, pod *v1.Pod, c *ctr) (time.Time, bool) {
	k := w.k
	image := c.spec.Image
	span := w.begin(pod, stages.Pull, c)
	fault, err := k.tracer.Gate(ctx, w.ref(pod), stages.Pull, Component)
	if err != nil {
		return time.Time{}, false
	}
	ref, err := images.ApplyDefaultTag(image)
	if err != nil {
		msg := err.Error()
		w.containerEvent(pod, c, v1.EventTypeWarning, "InspectFailed", "%s", msg)
		c.waitReason, c.waitMsg = "InvalidImageName", msg
		span.Fail("InvalidImageName", msg)
		return time.Time{}, false
	}
	c.imageRef = ref.String()
	policy := pullPolicy(c.spec, ref)
	present, _ := k.rt.ImageStatus(ctx, ref.String())
	if present != nil && policy != v1.PullAlways && fault == nil {
		msg := fmt.Sprintf("Container image %q already present on machine and can be accessed by the pod", image)
		w.containerEvent(pod, c, v1.EventTypeNormal, "Pulled", "%s", msg)
		c.imageID = present.RepoDigest
		c.waitReason, c.waitMsg = "", ""
		span.Succeed("Pulled", msg)
		return time.Time{}, true
	}
	if present == nil && policy == v1.PullNever {
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", image)
		w.containerEvent(pod, c, v1.EventTypeWarning, "ErrImageNeverPull", "%s", msg)
		c.waitReason, c.waitMsg = "ErrImageNeverPull", msg
		span.Fail("ErrImageNeverPull", msg)
		return time.Time{}, false
	}
	key := fmt.Sprintf("%s_%s", pod.UID, image)
	now := k.clock.Now()
	if k.imageBackOff.IsInBackOffSinceUpdate(key, now) {
		msg := fmt.Sprintf("Back-off pulling image %q", image)
		w.containerEvent(pod, c, v1.EventTypeNormal, "BackOff", "%s", msg)
		w.containerEvent(pod, c, v1.EventTypeWarning, "Failed", "Error: %s", "ImagePullBackOff")
		if c.pullErr != "" {
			msg = fmt.Sprintf("%s: %s", msg, c.pullErr)
		}
		c.waitReason, c.waitMsg = "ImagePullBackOff", msg
		span.Retry("ImagePullBackOff", msg, c.pullRetryAt)
		return c.pullRetryAt, false
	}
	w.containerEvent(pod, c, v1.EventTypeNormal, "Pulling", "Pulling image %q", image)
	waitStart := k.clock.Now()
	k.pullMu.Lock()
	pullStart := k.clock.Now()
	var img runtime.Image
	switch {
	case fault != nil:
		err = pullFault(*fault, ref)
		if pf, ok := k.rt.(pullFaulter); ok {
			err = pf.PullFault(ctx, ref.String(), fault.Variant)
		}
	default:
		// Another pod may have pulled it while this one waited: the
		// content is local, so the pull only resolves the manifest.
		if have, _ := k.rt.ImageStatus(ctx, ref.String()); have != nil && present == nil {
			img = *have
		} else {
			img, err = k.rt.PullImage(ctx, ref.String(), w.s.auth)
		}
	}
	k.pullMu.Unlock()
	if ctx.Err() != nil {
		return time.Time{}, false
	}
	end := k.clock.Now()
	if err != nil {
		w.containerEvent(pod, c, v1.EventTypeWarning, "Failed", "Failed to pull image %q: %v", image, err)
		w.containerEvent(pod, c, v1.EventTypeWarning, "Failed", "Error: %s", "ErrImagePull")
		k.imageBackOff.Next(key, end)
		c.pullRetryAt = end.Add(k.imageBackOff.Get(key))
		c.pullErr = "ErrImagePull: " + err.Error()
		c.waitReason, c.waitMsg = "ErrImagePull", err.Error()
		span.Retry("ErrImagePull", err.Error(), c.pullRetryAt)
		// Sync again shortly, as the kubelet does after a failed sync, which
		// turns ErrImagePull into ImagePullBackOff.
		return end.Add(time.Second), false
	}
	c.pullErr = ""
	msg := fmt.Sprintf("Successfully pulled image %q in %v (%v including waiting). Image size: %v bytes.",
		image, end.Sub(pullStart).Truncate(time.Millisecond), end.Sub(waitStart).Truncate(time.Millisecond), img.Size)
	w.containerEvent(pod, c, v1.EventTypeNormal, "Pulled", "%s", msg)
	c.imageID = img.RepoDigest
	c.waitReason, c.waitMsg = "", ""
	span.Succeed("Pulled", msg)
	return time.Time{}, true
}

// create is the create stage.
func (w *podWorker) create(ctx context.Context, pod *v1.Pod, c *ctr) (time.Time, bool) {
	k := w.k
	span := w.begin(pod, stages.Create, c)
	fault, err := k.tracer.Gate(ctx, w.ref(pod), stages.Create, Component)
	if err != nil {
		return time.Time{}, false
	}
	retry := func(reason, msg string) (time.Time, bool) {
		next := k.clock.Now().Add(SyncBackOffPeriod)
		w.containerEvent(pod, c, v1.EventTypeWarning, "Failed", "Error: %s", msg)
		c.waitReason, c.waitMsg = reason, msg
		span.Retry(reason, msg, next)
		return next, false
	}
	if fault != nil {
		reason, msg := createFault(*fault, c)
		return retry(reason, msg)
	}
	env, err := k.resolveEnv(ctx, pod, c.spec)
	if err != nil {
		return retry("CreateContainerConfigError", err.Error())
	}
	id, err := k.rt.CreateContainer(ctx, w.s.sandboxID, runtime.ContainerConfig{Name: c.spec.Name, Attempt: int(c.restarts),
		Image: c.imageRef, Command: c.spec.Command, Args: c.spec.Args, Env: env, Annotations: pod.Annotations,
		Resources: runtime.ResourcesFor(c.spec.Resources), Stdin: c.spec.Stdin, StdinOnce: c.spec.StdinOnce, TTY: c.spec.TTY})
	if err != nil {
		if ctx.Err() != nil {
			return time.Time{}, false
		}
		return retry("CreateContainerError", err.Error())
	}
	k.trackContainer(id, w)
	w.setLogIDs(c.spec.Name, id, c.prevID)
	c.id = id
	st, _ := k.rt.ContainerStatus(ctx, id)
	c.cur = &st
	if c.imageID == "" {
		c.imageID = st.ImageID
	}
	w.containerEvent(pod, c, v1.EventTypeNormal, "Created", "Container created")
	span.Succeed("Created", "Container created")
	return time.Time{}, true
}

// start is the start stage; a failed start leaves a StartError
// termination, which the crash back-off then restarts.
func (w *podWorker) start(ctx context.Context, pod *v1.Pod, c *ctr) (time.Time, bool) {
	k := w.k
	span := w.begin(pod, stages.Start, c)
	fault, err := k.tracer.Gate(ctx, w.ref(pod), stages.Start, Component)
	if err != nil {
		return time.Time{}, false
	}
	if fault != nil {
		err = startFault(*fault, c)
	} else {
		err = k.rt.StartContainer(ctx, c.id)
	}
	if err != nil {
		if ctx.Err() != nil {
			return time.Time{}, false
		}
		now := k.clock.Now()
		_ = k.rt.StopContainer(ctx, c.id, 0)
		c.cur = &runtime.ContainerStatus{ID: c.id, Name: c.spec.Name, State: runtime.StateExited, ExitCode: 128,
			Reason: "StartError", Message: err.Error(), StartedAt: time.Unix(0, 0).UTC(), FinishedAt: now}
		c.exitHandled = now
		w.containerEvent(pod, c, v1.EventTypeWarning, "Failed", "Error: %v", err)
		c.waitReason, c.waitMsg = "RunContainerError", err.Error()
		span.Retry("RunContainerError", err.Error(), time.Time{})
		return now, false // sync again: the crash back-off decides when to restart
	}
	st, _ := k.rt.ContainerStatus(ctx, c.id)
	c.cur = &st
	c.startedAt = st.StartedAt
	c.waitReason, c.waitMsg = "", ""
	c.probes = probeState{}
	w.containerEvent(pod, c, v1.EventTypeNormal, "Started", "Container started")
	span.Succeed("Started", "Container started")
	return time.Time{}, true
}

// postStart is the hooks stage: the postStart hook runs; on failure the
// container is killed (FailedPostStartHook) and restarted with back-off.
func (w *podWorker) postStart(ctx context.Context, pod *v1.Pod, c *ctr) (time.Time, bool) {
	k := w.k
	if c.init {
		return time.Time{}, true
	}
	span := w.begin(pod, stages.Hooks, c)
	fault, err := k.tracer.Gate(ctx, w.ref(pod), stages.Hooks, Component)
	if err != nil {
		return time.Time{}, false
	}
	var h *v1.LifecycleHandler
	if c.spec.Lifecycle != nil {
		h = c.spec.Lifecycle.PostStart
	}
	if h == nil && fault == nil {
		span.Succeed("", "no postStart hook")
		c.readySpan = w.begin(pod, stages.Ready, c)
		return time.Time{}, true
	}
	var msg string
	if fault != nil {
		var real bool
		if msg, real = w.realHookFault(ctx, pod, c); !real {
			msg = hookFault(*fault, pod, c)
		}
	} else {
		msg = w.runHook(ctx, pod, c, h)
	}
	if ctx.Err() != nil {
		return time.Time{}, false
	}
	if msg == "" {
		span.Succeed("", "postStart hook completed")
		c.readySpan = w.begin(pod, stages.Ready, c)
		return time.Time{}, true
	}
	w.containerEvent(pod, c, v1.EventTypeWarning, "FailedPostStartHook", "PostStartHook failed")
	w.containerEvent(pod, c, v1.EventTypeNormal, "Killing", "FailedPostStartHook")
	_ = k.rt.StopContainer(ctx, c.id, gracePeriod(pod))
	if st, err := k.rt.ContainerStatus(ctx, c.id); err == nil {
		c.cur = &st
		c.exitHandled = st.FinishedAt
	}
	c.waitReason, c.waitMsg = "PostStartHookError", msg
	span.Retry("FailedPostStartHook", msg, time.Time{})
	return k.clock.Now(), false
}

// runHook runs an exec or HTTP lifecycle handler and returns the
// kubelet's failure message, empty on success.
func (w *podWorker) runHook(ctx context.Context, pod *v1.Pod, c *ctr, h *v1.LifecycleHandler) string {
	switch {
	case h.Exec != nil:
		res, err := w.k.rt.ExecSync(ctx, c.id, h.Exec.Command, 30*time.Second)
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("command '%s' exited with %d: %s", strings.Join(h.Exec.Command, " "), res.ExitCode, res.Stderr)
		}
		if err != nil {
			return fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q",
				h.Exec.Command, c.spec.Name, formatPod(pod), err, res.Stdout+res.Stderr)
		}
	case h.HTTPGet != nil:
		if err := w.httpGet(ctx, pod, c, h.HTTPGet, 10*time.Second); err != nil {
			return fmt.Sprintf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v", h.HTTPGet.Path, c.spec.Name, formatPod(pod), err)
		}
	case h.Sleep != nil:
		select {
		case <-w.k.clock.After(time.Duration(h.Sleep.Seconds) * time.Second):
		case <-ctx.Done():
		}
	}
	return ""
}

func gracePeriod(pod *v1.Pod) time.Duration {
	if pod.DeletionGracePeriodSeconds != nil {
		return time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	return 30 * time.Second
}
