package controllerutil

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"

	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

// Owner is an object that owns pods: a ReplicaSet or a Job.
type Owner interface {
	metav1.Object
	runtime.Object
}

// PodCreate is one pod a controller creates for its owner, as
// kube-controller-manager's RealPodControl.CreatePods does, with podtrace's
// reconcile stage around it.
type PodCreate struct {
	Owner    Owner
	OwnerRef trace.Ref // the owner's lane
	Kind     schema.GroupVersionKind
	Template *v1.PodTemplateSpec
	Attempt  int
	// Mutate, when set, adjusts the pod before it is created (a Job adds
	// its tracking finalizer).
	Mutate func(*v1.Pod)
}

// CreatePod gates the reconcile stage on the owner's lane (breakpoints,
// faults), creates the pod from the template with the owner as controller,
// records the upstream SuccessfulCreate or FailedCreate event on the owner
// (a failure also reported to queue as a retry), and reports the stage on
// the new pod's lane. component and recorder are the controller's.
func (cfg Config) CreatePod(ctx context.Context, pc PodCreate, component string, recorder record.EventRecorder, queue *Queue) error {
	start := cfg.Clock.Now()
	fault, err := cfg.Tracer.Gate(ctx, pc.OwnerRef, stages.Reconcile, component)
	if err != nil {
		return err
	}
	ns := pc.Owner.GetNamespace()
	pod, err := PodFromTemplate(pc.Template, pc.Owner.GetName(), metav1.NewControllerRef(pc.Owner, pc.Kind))
	var created *v1.Pod
	switch {
	case err != nil:
	case fault != nil:
		err = FaultError(fault, "create", "pods", ns, cfg.User)
	default:
		if pc.Mutate != nil {
			pc.Mutate(pod)
		}
		created, err = cfg.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	}
	if err != nil {
		if apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause) {
			return err
		}
		msg := fmt.Sprintf("Error creating: %v", err)
		recorder.Event(pc.Owner, v1.EventTypeWarning, FailedCreatePodReason, msg)
		queue.AddFailure(KeyOf(pc.Owner), Failure{Ref: pc.OwnerRef, Start: start,
			Reason: FailedCreatePodReason, Message: msg, Attempt: pc.Attempt})
		return err
	}
	msg := fmt.Sprintf("Created pod: %v", created.Name)
	recorder.Event(pc.Owner, v1.EventTypeNormal, SuccessfulCreatePodReason, msg)
	podRef := trace.Ref{Kind: stages.KindPod, Namespace: created.Namespace, Name: created.Name, UID: string(created.UID)}
	cfg.Tracer.BeginAt(podRef, stages.Reconcile, component, start).
		With(func(e *stages.Event) { e.Attempt = pc.Attempt }).
		Succeed(SuccessfulCreatePodReason, msg)
	return nil
}
