package kubelet

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/podtrace/podtrace/engine/kubelet/network"
	"github.com/podtrace/podtrace/engine/kubelet/runtime"
	"github.com/podtrace/podtrace/stages"
)

// terminate takes a deleted pod down: the terminate stage (preStop hooks,
// Killing, stop signal, kill after the grace period), the cleanup stage (CNI
// DEL, sandbox removal), then deletes the object with grace period 0 as
// the kubelet's status manager does. removed means the object is already
// gone (a force delete): containers are killed at once.
func (w *podWorker) terminate(ctx context.Context, pod *v1.Pod, removed bool) {
	k := w.k
	ref := w.ref(pod)
	grace := gracePeriod(pod)
	if removed {
		grace = 0
	}
	span := w.begin(pod, stages.Terminate, nil)
	if _, err := k.tracer.Gate(ctx, ref, stages.Terminate, Component); err != nil {
		return
	}
	deadline := k.clock.Now().Add(grace)
	var wg sync.WaitGroup
	stopped := 0
	for _, c := range append(append([]*ctr{}, w.s.init...), w.s.regular...) {
		if c.id == "" {
			continue
		}
		st, err := k.rt.ContainerStatus(ctx, c.id)
		if err != nil || st.State == runtime.StateExited {
			continue
		}
		stopped++
		wg.Add(1)
		go func(c *ctr) {
			defer wg.Done()
			w.stopContainer(ctx, pod, c, deadline)
		}(c)
	}
	wg.Wait()
	if ctx.Err() != nil {
		return
	}
	span.Succeed("Killing", fmt.Sprintf("stopped %d container(s) within the %v grace period", stopped, grace))

	span = w.begin(pod, stages.Cleanup, nil)
	if _, err := k.tracer.Gate(ctx, ref, stages.Cleanup, Component); err != nil {
		return
	}
	if w.s.sandboxID != "" {
		np := network.Pod{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID), SandboxID: w.s.sandboxID}
		if err := k.net.TearDown(ctx, np); err != nil {
			w.podEvent(pod, v1.EventTypeWarning, "FailedKillPod", "error killing pod: failed to \"KillPodSandbox\" for %q with KillPodSandboxError: %q", pod.UID, err.Error())
		}
		_ = k.rt.StopPodSandbox(ctx, w.s.sandboxID)
		_ = k.rt.RemovePodSandbox(ctx, w.s.sandboxID)
		span.Succeed("", fmt.Sprintf("CNI DEL released %s; sandbox %s removed", w.s.podIP, short(w.s.sandboxID)))
	} else {
		span.Succeed("", "no sandbox to remove")
	}
	w.s.sandboxReady = false
	w.setFinished()
	w.mu.Lock()
	w.terminatedDone = true
	w.mu.Unlock()
	for _, c := range append(append([]*ctr{}, w.s.init...), w.s.regular...) {
		k.crashBackOff.DeleteEntry(fmt.Sprintf("%s_%s_%s_%s", pod.Name, pod.Namespace, pod.UID, c.spec.Name))
		k.imageBackOff.DeleteEntry(fmt.Sprintf("%s_%s", pod.UID, c.spec.Image))
	}
	if removed {
		return
	}
	err := k.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To(int64(0)),
		Preconditions:      &metav1.Preconditions{UID: ptr.To(types.UID(pod.UID))},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		w.podEvent(pod, v1.EventTypeWarning, "FailedKillPod", "error deleting pod: %v", err)
	}
}

// stopContainer runs the preStop hook, then stops the container with what
// is left of the grace period.
func (w *podWorker) stopContainer(ctx context.Context, pod *v1.Pod, c *ctr, deadline time.Time) {
	k := w.k
	if c.spec.Lifecycle != nil && c.spec.Lifecycle.PreStop != nil {
		done := make(chan string, 1)
		go func() { done <- w.runHook(ctx, pod, c, c.spec.Lifecycle.PreStop) }()
		t := k.clock.NewTimer(max(deadline.Sub(k.clock.Now()), 0))
		select {
		case msg := <-done:
			if msg != "" {
				w.containerEvent(pod, c, v1.EventTypeWarning, "FailedPreStopHook", "PreStopHook failed")
			}
		case <-t.C():
		case <-ctx.Done():
		}
		t.Stop()
	}
	w.containerEvent(pod, c, v1.EventTypeNormal, "Killing", "Stopping container %s", c.spec.Name)
	// The kubelet gives the runtime at least 2 s after a preStop hook ate the grace period.
	timeout := max(deadline.Sub(k.clock.Now()), 0)
	if c.spec.Lifecycle != nil && c.spec.Lifecycle.PreStop != nil && timeout < 2*time.Second {
		timeout = 2 * time.Second
	}
	_ = k.rt.StopContainer(ctx, c.id, timeout)
}
