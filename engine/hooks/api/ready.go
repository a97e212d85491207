package api

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"

	core "k8s.io/kubernetes/pkg/apis/core"

	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

// updatePod is an untraced write of a pod (the kubelet's status updates,
// the scheduler's binding, controllers' patches). When it changes the
// pod's Ready condition it ends the ready stage: True is Ready, a fall back
// to False is the stage retrying with the kubelet's reason
// (ContainersNotReady: "containers with unready status: [web]").
func (s *storageHook) updatePod(ctx context.Context, key string, dest runtime.Object, ignoreNotFound bool,
	pre *storage.Preconditions, tryUpdate storage.UpdateFunc, cached runtime.Object) error {
	var was, is *core.PodCondition
	var pod *core.Pod
	wrapped := func(in runtime.Object, res storage.ResponseMeta) (runtime.Object, *uint64, error) {
		out, ttl, err := tryUpdate(in, res)
		if err == nil {
			was, is = readyCondition(in), readyCondition(out)
			pod, _ = out.(*core.Pod)
		}
		return out, ttl, err
	}
	err := s.Interface.GuaranteedUpdate(ctx, key, dest, ignoreNotFound, pre, wrapped, cached)
	if err != nil || pod == nil || is == nil || (was != nil && was.Status == is.Status) {
		return err
	}
	ref := trace.Ref{Kind: stages.KindPod, Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID), Node: pod.Spec.NodeName}
	now := s.h.tr.Clock().Now()
	switch {
	case is.Status == core.ConditionTrue:
		s.h.tr.Record(ref, stages.Ready, "kubelet", s.h.tr.ReadySince(ref, startedAt(pod), now), now, stages.Succeeded, "",
			"Ready=True: every container is ready", nil)
	case was != nil && was.Status == core.ConditionTrue:
		reason, msg := is.Reason, is.Message
		if c := condition(pod, core.ContainersReady); c != nil && c.Status != core.ConditionTrue {
			reason, msg = c.Reason, c.Message
		}
		s.h.tr.Record(ref, stages.Ready, "kubelet", now, now, stages.Retrying, reason, fmt.Sprintf("Ready=False: %s", msg), nil)
	}
	return nil
}

func readyCondition(obj runtime.Object) *core.PodCondition {
	p, ok := obj.(*core.Pod)
	if !ok {
		return nil
	}
	return condition(p, core.PodReady)
}

func condition(p *core.Pod, t core.PodConditionType) *core.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// startedAt is when the pod's last container started running, as its
// status says (zero when none has): the ready stage spans its probes.
func startedAt(p *core.Pod) time.Time {
	var t time.Time
	for _, c := range p.Status.ContainerStatuses {
		if r := c.State.Running; r != nil && r.StartedAt.Time.After(t) {
			t = r.StartedAt.Time
		}
	}
	return t
}
