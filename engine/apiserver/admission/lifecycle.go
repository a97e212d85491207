package admission

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// NamespaceLifecycle refuses content in missing or terminating namespaces
// and the deletion of default, kube-system and kube-public, as upstream's
// NamespaceLifecycle plugin does.
type NamespaceLifecycle struct {
	store    Store
	immortal map[string]bool
}

// NewNamespaceLifecycle returns the plugin reading namespaces from store.
func NewNamespaceLifecycle(store Store) *NamespaceLifecycle {
	return &NamespaceLifecycle{store: store, immortal: map[string]bool{
		metav1.NamespaceDefault: true, metav1.NamespaceSystem: true, metav1.NamespacePublic: true,
	}}
}

// Name returns "NamespaceLifecycle".
func (*NamespaceLifecycle) Name() string { return "NamespaceLifecycle" }

var namespaceGK = schema.GroupKind{Kind: "Namespace"}

// Admit applies the namespace lifecycle rules.
func (l *NamespaceLifecycle) Admit(ctx context.Context, a *Attributes) error {
	isNamespace := a.Kind.GroupKind() == namespaceGK
	if a.Operation == Delete && isNamespace && l.immortal[a.Name] {
		return apierrors.NewForbidden(a.Resource.GroupResource(), a.Name, fmt.Errorf("this namespace may not be deleted"))
	}
	if isNamespace || a.Namespace == "" || a.Operation == Delete {
		return nil
	}
	obj, err := l.store.Get(ctx, "namespaces", "", a.Namespace)
	switch {
	case apierrors.IsNotFound(err):
		return apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, a.Namespace)
	case err != nil:
		return apierrors.NewInternalError(err)
	}
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return internalError("namespace lookup returned %T", obj)
	}
	if a.Operation != Create || ns.Status.Phase != corev1.NamespaceTerminating {
		return nil
	}
	ferr := NewForbidden(a, fmt.Errorf("unable to create new content in namespace %s because it is being terminated", a.Namespace))
	if se, ok := ferr.(*apierrors.StatusError); ok {
		se.ErrStatus.Details.Causes = append(se.ErrStatus.Details.Causes, metav1.StatusCause{
			Type:    corev1.NamespaceTerminatingCause,
			Message: fmt.Sprintf("namespace %s is being terminated", a.Namespace),
			Field:   "metadata.namespace",
		})
	}
	return ferr
}
