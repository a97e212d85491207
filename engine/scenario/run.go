package scenario

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/kubectl/pkg/util/podutils"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/apply"
)

// String says the goal in words.
func (g Goal) String() string {
	if g.Deployment != "" {
		return fmt.Sprintf("every pod of deployment %s/%s is Ready", g.Namespace, g.Deployment)
	}
	return fmt.Sprintf("pod %s/%s is Running and Ready", g.Namespace, g.Pod)
}

// steadySeconds is how long a pod must have been Ready for the goal to
// hold, as a Deployment's minReadySeconds asks before a pod counts as
// available: a crash-looping pod is Ready for a moment after each restart,
// and two of them at once are not a fixed deployment.
const steadySeconds = 3

// Check reports whether the goal holds, and where the cluster stands.
func (g Goal) Check(ctx context.Context, c kubernetes.Interface) (bool, string, error) {
	if g.Pod != "" {
		p, err := c.CoreV1().Pods(g.Namespace).Get(ctx, g.Pod, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, fmt.Sprintf("pod %s/%s does not exist", g.Namespace, g.Pod), nil
		}
		if err != nil {
			return false, "", fmt.Errorf("get pod: %w", err)
		}
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && podutils.IsPodAvailable(p, steadySeconds, metav1.Now()) {
			return true, fmt.Sprintf("pod %s/%s is Running and Ready", g.Namespace, g.Pod), nil
		}
		return false, fmt.Sprintf("pod %s/%s is %s%s", g.Namespace, g.Pod, p.Status.Phase, notReadyWhy(p)), nil
	}
	d, err := c.AppsV1().Deployments(g.Namespace).Get(ctx, g.Deployment, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, fmt.Sprintf("deployment %s/%s does not exist", g.Namespace, g.Deployment), nil
	}
	if err != nil {
		return false, "", fmt.Errorf("get deployment: %w", err)
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	st := d.Status
	detail := fmt.Sprintf("deployment %s/%s: %d of %d replicas Ready, %d up to date, %d in total",
		g.Namespace, g.Deployment, st.ReadyReplicas, want, st.UpdatedReplicas, st.Replicas)
	met := st.ObservedGeneration >= d.Generation && st.UpdatedReplicas == want && st.ReadyReplicas == want && st.Replicas == want
	if !met {
		return false, detail, nil
	}
	// The status can lag: the pods themselves must be Ready.
	sel := metav1.FormatLabelSelector(d.Spec.Selector)
	pods, err := c.CoreV1().Pods(g.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return false, "", fmt.Errorf("list pods: %w", err)
	}
	ready, now := int32(0), metav1.Now()
	for i := range pods.Items {
		if p := &pods.Items[i]; p.DeletionTimestamp == nil && podutils.IsPodAvailable(p, steadySeconds, now) {
			ready++
		}
	}
	if ready < want {
		return false, fmt.Sprintf("%s (%d Ready for %ds)", detail, ready, steadySeconds), nil
	}
	return true, detail, nil
}

// notReadyWhy names a waiting container's reason, as kubectl get pods shows it.
func notReadyWhy(p *corev1.Pod) string {
	for _, s := range p.Status.ContainerStatuses {
		if w := s.State.Waiting; w != nil && w.Reason != "" {
			return " (" + w.Reason + ")"
		}
	}
	if podutils.IsPodReady(p) {
		return fmt.Sprintf(", Ready for less than %ds", steadySeconds)
	}
	return ", not Ready"
}

// Prepare breaks the cluster as the scenario describes: it deletes the setup
// objects, injects the faults and applies the manifest, as the admin. The
// engine must run the scenario's Nodes.
func (s *Scenario) Prepare(ctx context.Context, e *engine.Engine) error {
	dyn, err := dynamic.NewForConfig(e.AdminConfig())
	if err != nil {
		return fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	mapper, err := apply.Mapper(e.AdminConfig())
	if err != nil {
		return fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	for _, obj := range s.Setup {
		if err := deleteObject(ctx, dyn, mapper, obj); err != nil {
			return fmt.Errorf("scenario %s: setup: %w", s.Name, err)
		}
	}
	for _, f := range s.Faults {
		e.Tracer.Faults.Add(f)
	}
	SyncNodeFaults(ctx, e)
	if err := applyManifest(ctx, e, s.Manifest, s.Name+" manifests"); err != nil {
		return fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	return nil
}

// ApplyFix applies the documented fix.
func (s *Scenario) ApplyFix(ctx context.Context, e *engine.Engine) error {
	if s.Fix.RemoveFaults {
		for _, f := range e.Tracer.Faults.List() {
			e.Tracer.Faults.Remove(f.ID)
		}
		SyncNodeFaults(ctx, e)
	}
	if s.Fix.Apply != "" {
		if err := applyManifest(ctx, e, s.Fix.Apply, s.Name+" fix"); err != nil {
			return fmt.Errorf("scenario %s: fix: %w", s.Name, err)
		}
	}
	if s.Fix.Apply != "" && (s.Fix.Annotate != nil || s.Fix.Restart != nil) {
		// The next command comes a moment later, as a participant types it:
		// kube-apiserver's admission (the quota's cache) has the applied
		// objects by then, so the sync it triggers is not refused again.
		if err := sleep(ctx, time.Second); err != nil {
			return err
		}
	}
	if s.Fix.Annotate != nil {
		if _, err := s.Fix.Annotate.Run(ctx, e); err != nil {
			return fmt.Errorf("scenario %s: fix: %w", s.Name, err)
		}
	}
	if s.Fix.Restart != nil {
		if err := s.Fix.Restart.Run(ctx, e); err != nil {
			return fmt.Errorf("scenario %s: fix: %w", s.Name, err)
		}
	}
	return nil
}

func applyManifest(ctx context.Context, e *engine.Engine, manifest, source string) error {
	a, err := apply.New(e.AdminConfig())
	if err != nil {
		return err
	}
	// A controller writing the same object meanwhile makes the apply
	// conflict, and a namespace created by the same manifest may not be in
	// the API server's cache yet; try again, as one would re-run kubectl apply.
	conflict := func(err error) bool {
		msg := err.Error()
		return strings.Contains(msg, "Error from server (Conflict)") ||
			(strings.Contains(msg, "Error from server (NotFound)") && strings.Contains(msg, `: namespaces "`))
	}
	return retry.OnError(retry.DefaultBackoff, conflict, func() error {
		_, err := a.Apply(ctx, []byte(manifest), source)
		return err
	})
}

// deleteObject deletes "resource/name" or "resource/namespace/name"; the
// resource is a plural, singular or short name, as kubectl takes it.
func deleteObject(ctx context.Context, dyn dynamic.Interface, mapper meta.RESTMapper, obj string) error {
	resource, ns, name, err := splitObject(obj)
	if err != nil {
		return err
	}
	gvr, err := mapper.ResourceFor(schema.GroupVersionResource{Resource: strings.ToLower(resource)})
	if err != nil {
		return fmt.Errorf("delete %s: the server doesn't have a resource type %q", obj, resource)
	}
	gvk, err := mapper.KindFor(gvr)
	if err != nil {
		return fmt.Errorf("delete %s: %w", obj, err)
	}
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("delete %s: %w", obj, err)
	}
	var ri dynamic.ResourceInterface = dyn.Resource(gvr)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		if ns == "" {
			ns = "default"
		}
		ri = dyn.Resource(gvr).Namespace(ns)
	}
	if err := ri.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s: %w", obj, err)
	}
	return nil
}
