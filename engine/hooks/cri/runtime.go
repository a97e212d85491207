package cri

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubeletevents "k8s.io/kubernetes/pkg/kubelet/events"

	"k8s.io/kubernetes/pkg/kubelet/util/format"

	"github.com/podtrace/podtrace/stages"
)

// runtimeHook is the RuntimeService the kubelet sees.
type runtimeHook struct {
	internalapi.RuntimeService
	h *Hooks
}

// RunPodSandbox is the sandbox stage. It also ends the pod's kubelet
// stage: the kubelet asks for a sandbox once the pod is admitted and its
// volumes are mounted.
func (r *runtimeHook) RunPodSandbox(ctx context.Context, cfg *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	h := r.h
	if h.stopped.Load() {
		return "", errStopped
	}
	md := cfg.GetMetadata()
	ref := h.ref(md)
	// A breakpoint, delay or hang at the kubelet stage holds the pod here,
	// before its sandbox. (The stage's fail variants are the node's
	// readiness, which the scenario package applies to the whole node.)
	if _, err := h.tr.Gate(ctx, ref, stages.Kubelet, Component); err != nil {
		return "", err
	}
	h.endKubelet(md.GetUid(), fmt.Sprintf("pod admitted, volumes mounted; pod dir /var/lib/kubelet/pods/%s", md.GetUid()))
	start := h.tr.Clock().Now()
	if f, err := h.tr.Gate(ctx, ref, stages.Sandbox, Component); err != nil {
		return "", err
	} else if f != nil {
		err := sandboxError(*f)
		h.tr.BeginWithAt(ref, stages.Sandbox, Component, start, withContainer("", int(md.GetAttempt())+1)).
			Retry(kubeletevents.FailedCreatePodSandBox, err.Error(), time.Time{})
		return "", err
	}
	// The sandbox is up when RunPodSandbox returns with its pause container
	// running: containerd sets up the network (the cni stage) first, inside
	// the call. The simulated runtime starts the pause container before its
	// network, and ends the stage there (sandboxUp).
	span := h.tr.BeginWithAt(ref, stages.Sandbox, Component, start, withContainer("", int(md.GetAttempt())+1))
	var once sync.Once
	end := func(id string, err error) {
		once.Do(func() {
			if err != nil {
				span.Retry(kubeletevents.FailedCreatePodSandBox, err.Error(), time.Time{})
				return
			}
			span.Succeed("", fmt.Sprintf("sandbox %s running (pause container)", short(id)))
		})
	}
	h.mu.Lock()
	h.starting[md.GetUid()] = end
	h.startingUIDs[md.GetNamespace()+"/"+md.GetName()] = md.GetUid()
	h.mu.Unlock()
	id, err := r.RuntimeService.RunPodSandbox(ctx, cfg, handler)
	h.mu.Lock()
	delete(h.starting, md.GetUid())
	delete(h.startingUIDs, md.GetNamespace()+"/"+md.GetName())
	h.mu.Unlock()
	end(id, err)
	if err != nil {
		return "", err
	}
	h.mu.Lock()
	h.sandboxes[id] = ref
	h.mu.Unlock()
	return id, nil
}

// StopPodSandbox is the cleanup stage: the kubelet stops the sandbox (and
// the runtime tears its network down) once a deleted or finished pod's
// containers are gone. (A sandbox stopped to be re-created is no stage.)
func (r *runtimeHook) StopPodSandbox(ctx context.Context, id string) error {
	ref, ok := r.h.sandboxRef(id)
	if !ok || !r.h.isEnding(ref.UID) {
		return r.RuntimeService.StopPodSandbox(ctx, id)
	}
	return r.h.call(ctx, ref, stages.Cleanup, nil, func(stages.Fault) error { return nil },
		func() error { return r.RuntimeService.StopPodSandbox(ctx, id) },
		func() (string, string) {
			r.h.mu.Lock()
			del := r.h.networkDel[id]
			delete(r.h.networkDel, id)
			r.h.mu.Unlock()
			if del == "" {
				del = "network torn down"
			}
			return "", fmt.Sprintf("sandbox %s stopped, %s", short(id), del)
		}, "Failed")
}

// RemovePodSandbox forgets the sandbox once the runtime has removed it.
func (r *runtimeHook) RemovePodSandbox(ctx context.Context, id string) error {
	err := r.RuntimeService.RemovePodSandbox(ctx, id)
	if err == nil {
		r.h.mu.Lock()
		uid := r.h.sandboxes[id].UID
		delete(r.h.kubelet, uid)
		delete(r.h.ending, uid)
		delete(r.h.ports, uid)
		delete(r.h.postStart, uid)
		delete(r.h.ready, uid)
		for k := range r.h.pulled {
			if strings.HasPrefix(k, uid+"\x00") {
				delete(r.h.pulled, k)
			}
		}
		delete(r.h.sandboxes, id)
		delete(r.h.networkDel, id)
		for cid, c := range r.h.containers {
			if c.sandbox == id {
				delete(r.h.containers, cid)
			}
		}
		r.h.mu.Unlock()
	}
	return err
}

// CreateContainer is the create stage.
func (r *runtimeHook) CreateContainer(ctx context.Context, sandbox string, cfg *runtimeapi.ContainerConfig, sc *runtimeapi.PodSandboxConfig) (string, error) {
	if r.h.stopped.Load() {
		return "", errStopped
	}
	h := r.h
	name, attempt := cfg.GetMetadata().GetName(), int(cfg.GetMetadata().GetAttempt())+1
	ref := h.ref(sc.GetMetadata())
	h.presentImage(ref, name, cfg.GetImage().GetUserSpecifiedImage())
	var id string
	err := h.call(ctx, ref, stages.Create, withContainer(name, attempt),
		func(f stages.Fault) error { return createError(f, name) },
		func() (err error) { id, err = r.RuntimeService.CreateContainer(ctx, sandbox, cfg, sc); return err },
		func() (string, string) { return kubeletevents.CreatedContainer, "Container created" }, "CreateContainerError")
	if err != nil {
		return "", err
	}
	h.mu.Lock()
	h.containers[id] = container{sandbox: sandbox, name: name, attempt: attempt, command: cfg.GetCommand(),
		preStop: preStopCommand(cfg.GetAnnotations())}
	h.mu.Unlock()
	return id, nil
}

// StartContainer is the start stage.
func (r *runtimeHook) StartContainer(ctx context.Context, id string) error {
	if r.h.stopped.Load() {
		return errStopped
	}
	ref, c, ok := r.h.containerRef(id)
	if !ok {
		return r.RuntimeService.StartContainer(ctx, id)
	}
	err := r.h.call(ctx, ref, stages.Start, withContainer(c.name, c.attempt),
		func(f stages.Fault) error { return startError(f, c.command) },
		func() error { return r.RuntimeService.StartContainer(ctx, id) },
		func() (string, string) { return kubeletevents.StartedContainer, "Container started" }, "RunContainerError")
	if err == nil {
		r.h.noPostStart(ref, c.name, c.attempt)
	}
	return err
}

// StopContainer is the terminate stage of a deleted pod: the stop signal,
// then a kill after the grace period. (A container killed to be restarted,
// after a failed liveness probe or postStart hook, shows as its next start.)
func (r *runtimeHook) StopContainer(ctx context.Context, id string, timeout int64) error {
	ref, c, ok := r.h.containerRef(id)
	if !ok || !r.h.isEnding(ref.UID) {
		return r.RuntimeService.StopContainer(ctx, id, timeout)
	}
	return r.h.call(ctx, ref, stages.Terminate, withContainer(c.name, c.attempt), func(stages.Fault) error { return nil },
		func() error { return r.RuntimeService.StopContainer(ctx, id, timeout) },
		func() (string, string) {
			return kubeletevents.KillingContainer, fmt.Sprintf("Stopping container %s (grace period %ds)", c.name, timeout)
		}, "FailedKillPod")
}

// ExecSync serves exec hooks and exec probes. The kubelet runs hooks with
// no timeout and probes with the probe's: a hook is the hooks stage (or
// part of terminate, for the container's preStop command); a probe is not
// a stage of its own (the pod's Ready condition ends the ready stage), but
// a ready fault makes it fail as a failing command would.
func (r *runtimeHook) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, error) {
	h := r.h
	ref, c, ok := h.containerRef(id)
	if !ok {
		return r.RuntimeService.ExecSync(ctx, id, cmd, timeout)
	}
	if timeout > 0 {
		if f := h.tr.Fault(ref, stages.Ready); f != nil {
			return nil, nil, exitError(cmd, 1)
		}
		return r.RuntimeService.ExecSync(ctx, id, cmd, timeout)
	}
	if c.preStop != "" && c.preStop == commandKey(cmd) {
		return r.RuntimeService.ExecSync(ctx, id, cmd, timeout)
	}
	var out, errOut []byte
	err := h.call(ctx, ref, stages.Hooks, withContainer(c.name, c.attempt),
		func(stages.Fault) error { return exitError(cmd, 1) },
		func() (err error) { out, errOut, err = r.RuntimeService.ExecSync(ctx, id, cmd, timeout); return err },
		func() (string, string) { return "", fmt.Sprintf("postStart hook %q completed", strings.Join(cmd, " ")) },
		kubeletevents.FailedPostStartHook, func(err error) string {
			// The kubelet's own words for it (pkg/kubelet/lifecycle), which
			// it keeps out of the Event and puts in the container's status.
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: ref.Namespace, UID: types.UID(ref.UID)}}
			return fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q",
				cmd, c.name, format.Pod(pod), err, string(append(out, errOut...)))
		})
	return out, errOut, err
}

// Status reports the runtime's conditions; with SetNotReady(true) the
// network is not ready, as when a CNI plugin is not initialized, and the
// kubelet marks its Node NotReady.
func (r *runtimeHook) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	resp, err := r.RuntimeService.Status(ctx, verbose)
	if err != nil || !r.h.NotReady() {
		return resp, err
	}
	out := &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{}, Info: resp.GetInfo()}
	for _, c := range resp.GetStatus().GetConditions() {
		if c.GetType() == runtimeapi.NetworkReady {
			c = &runtimeapi.RuntimeCondition{Type: runtimeapi.NetworkReady, Status: false, Reason: "NetworkPluginNotReady",
				Message: "Network plugin returns error: cni plugin not initialized"}
		}
		out.Status.Conditions = append(out.Status.Conditions, c)
	}
	return out, nil
}
