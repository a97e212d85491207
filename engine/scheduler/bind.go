package scheduler

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podtrace/podtrace/engine/scheduler/framework"
	"github.com/podtrace/podtrace/engine/scheduler/queue"
	"github.com/podtrace/podtrace/stages"
)

// bindFaultError is the error an injected bind fault produces: the
// apiserver's 409 for a binding that lost a race.
func bindFaultError(pod *v1.Pod) error {
	return apierrors.NewConflict(schema.GroupResource{Resource: "pods/binding"}, pod.Name,
		errors.New("the object has been modified; please apply your changes to the latest version and try again"))
}

// bind is the binding cycle: gate, POST pods/binding with bounded
// concurrency, then the Scheduled event, or forget the assumed pod and retry
// with back-off.
func (s *Scheduler) bind(ctx context.Context, pi *queue.QueuedPodInfo, assumed *v1.Pod, node string) {
	ref := refOf(assumed, node)
	f, err := s.cfg.Tracer.Gate(ctx, ref, stages.Bind, Component)
	if err != nil {
		s.cache.ForgetPod(assumed)
		s.queue.Done(assumed.UID)
		return
	}
	select {
	case s.bindSem <- struct{}{}:
	case <-ctx.Done():
		s.cache.ForgetPod(assumed)
		s.queue.Done(assumed.UID)
		return
	}
	span := s.cfg.Tracer.BeginWith(ref, stages.Bind, Component, func(e *stages.Event) {
		e.Attempt, e.User, e.Verb = pi.Attempts, User, "create"
	})
	if f != nil {
		err = bindFaultError(assumed)
	} else {
		err = s.cfg.Client.CoreV1().Pods(assumed.Namespace).Bind(ctx, &v1.Binding{
			ObjectMeta: metav1.ObjectMeta{Namespace: assumed.Namespace, Name: assumed.Name, UID: assumed.UID},
			Target:     v1.ObjectReference{Kind: "Node", Name: node},
		}, metav1.CreateOptions{})
	}
	<-s.bindSem
	if err == nil {
		msg := fmt.Sprintf("Successfully assigned %v/%v to %v", assumed.Namespace, assumed.Name, node)
		span.Succeed("Scheduled", msg)
		s.recorder.Event(assumed, v1.EventTypeNormal, "Scheduled", msg)
		s.queue.Done(assumed.UID)
		return
	}
	// Binding failed: release the node and let others (and this pod) retry.
	s.cache.ForgetPod(assumed)
	s.queue.MoveAllToActiveOrBackoff()
	// The bind span ends retrying (or failed if the pod is gone), with the
	// FailedScheduling message and when the pod will be scheduled again.
	s.handleFailure(ctx, span, pi, framework.AsStatus(err), nil, nil, true)
}
