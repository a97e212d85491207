package controllerutil

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/kubernetes"
)

// Claimer decides which objects a controller owns, as upstream's
// ControllerRefManager: it keeps the objects it controls that match, adopts
// matching orphans (patching in a controller reference) and releases the
// objects it controls that no longer match (patching the reference out).
type Claimer struct {
	// Controller is the owner; Kind its group, version and kind.
	Controller metav1.Object
	Kind       schema.GroupVersionKind
	// CanAdopt is asked once, before the first adoption: it should recheck
	// that the controller still exists and is not being deleted.
	CanAdopt func(ctx context.Context) error
	// Patch applies a strategic merge patch to the dependent namespace/name.
	Patch func(ctx context.Context, namespace, name string, patch []byte) error

	once     sync.Once
	adoptErr error
}

// NewClaimer returns a Claimer for controller, of kind, that patches
// dependents with patch. Its CanAdopt fetches the controller fresh with get
// and refuses when the name now belongs to another object (another UID) or
// the controller is being deleted.
func NewClaimer[T metav1.Object](controller T, kind schema.GroupVersionKind,
	get func(ctx context.Context) (T, error),
	patch func(ctx context.Context, namespace, name string, patch []byte) error) *Claimer {
	return &Claimer{
		Controller: controller,
		Kind:       kind,
		CanAdopt: RecheckDeletionTimestamp(func(ctx context.Context) (metav1.Object, error) {
			fresh, err := get(ctx)
			if err != nil {
				return nil, err
			}
			if fresh.GetUID() != controller.GetUID() {
				return nil, fmt.Errorf("original %v %v/%v is gone: got uid %v, wanted %v",
					kind.Kind, controller.GetNamespace(), controller.GetName(), fresh.GetUID(), controller.GetUID())
			}
			return fresh, nil
		}),
		Patch: patch,
	}
}

// ClaimAll claims each of objs (Claim), matching them by selector, and
// returns the ones the controller owns afterwards, in order, with the
// claims' errors aggregated.
func ClaimAll[T metav1.Object](ctx context.Context, m *Claimer, selector labels.Selector, objs []T) ([]T, error) {
	match := func(o metav1.Object) bool { return selector.Matches(labels.Set(o.GetLabels())) }
	var claimed []T
	var errs []error
	for _, o := range objs {
		ok, err := m.Claim(ctx, o, match)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			claimed = append(claimed, o)
		}
	}
	return claimed, utilerrors.NewAggregate(errs)
}

// PatchPods returns a Claimer Patch that patches pods through client.
func PatchPods(client kubernetes.Interface) func(ctx context.Context, namespace, name string, patch []byte) error {
	return func(ctx context.Context, namespace, name string, patch []byte) error {
		_, err := client.CoreV1().Pods(namespace).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		return err
	}
}

// PatchReplicaSets returns a Claimer Patch that patches replica sets through client.
func PatchReplicaSets(client kubernetes.Interface) func(ctx context.Context, namespace, name string, patch []byte) error {
	return func(ctx context.Context, namespace, name string, patch []byte) error {
		_, err := client.AppsV1().ReplicaSets(namespace).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		return err
	}
}

// ResolveControllerRef returns the controller ref names, fetched with get
// (a lister's Get), when ref is of kind and still names the same object
// (the same UID); the zero T (nil) otherwise.
func ResolveControllerRef[T metav1.Object](ref *metav1.OwnerReference, kind string, get func(name string) (T, error)) T {
	var none T
	if ref == nil || ref.Kind != kind {
		return none
	}
	obj, err := get(ref.Name)
	if err != nil || obj.GetUID() != ref.UID {
		return none
	}
	return obj
}

// Claim reports whether the controller owns obj after adopting or releasing
// it as needed; match says whether obj belongs to the controller by its labels.
func (m *Claimer) Claim(ctx context.Context, obj metav1.Object, match func(metav1.Object) bool) (bool, error) {
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		if ref.UID != m.Controller.GetUID() {
			return false, nil // owned by someone else
		}
		if match(obj) {
			return true, nil
		}
		if m.Controller.GetDeletionTimestamp() != nil {
			return false, nil
		}
		if err := m.release(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			return false, err
		}
		return false, nil
	}
	if m.Controller.GetDeletionTimestamp() != nil || !match(obj) || obj.GetDeletionTimestamp() != nil ||
		(m.Controller.GetNamespace() != "" && m.Controller.GetNamespace() != obj.GetNamespace()) {
		return false, nil
	}
	if err := m.adopt(ctx, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

func (m *Claimer) adopt(ctx context.Context, obj metav1.Object) error {
	m.once.Do(func() {
		if m.CanAdopt != nil {
			m.adoptErr = m.CanAdopt(ctx)
		}
	})
	if m.adoptErr != nil {
		return fmt.Errorf("can't adopt %s %v/%v (%v): %v", m.Kind.Kind, obj.GetNamespace(), obj.GetName(), obj.GetUID(), m.adoptErr)
	}
	patch, err := AdoptPatch(m.Controller, m.Kind, obj.GetUID())
	if err != nil {
		return err
	}
	return m.Patch(ctx, obj.GetNamespace(), obj.GetName(), patch)
}

func (m *Claimer) release(ctx context.Context, obj metav1.Object) error {
	patch, err := ReleasePatch(obj.GetUID(), m.Controller.GetUID())
	if err != nil {
		return err
	}
	err = m.Patch(ctx, obj.GetNamespace(), obj.GetName(), patch)
	if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) {
		return nil
	}
	return err
}

// AdoptPatch is the strategic merge patch that makes controller the
// controlling owner of the object with uid (the uid guards against a
// recreated object of the same name).
func AdoptPatch(controller metav1.Object, kind schema.GroupVersionKind, uid types.UID) ([]byte, error) {
	type meta struct {
		OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
		UID             types.UID               `json:"uid"`
	}
	yes := true
	return json.Marshal(struct {
		Metadata meta `json:"metadata"`
	}{meta{UID: uid, OwnerReferences: []metav1.OwnerReference{{APIVersion: kind.GroupVersion().String(), Kind: kind.Kind,
		Name: controller.GetName(), UID: controller.GetUID(), Controller: &yes, BlockOwnerDeletion: &yes}}}})
}

// ReleasePatch is the strategic merge patch that removes the owner reference
// to ownerUID from the object with uid.
func ReleasePatch(uid, ownerUID types.UID) ([]byte, error) {
	type meta struct {
		UID             types.UID           `json:"uid"`
		OwnerReferences []map[string]string `json:"ownerReferences"`
	}
	return json.Marshal(struct {
		Metadata meta `json:"metadata"`
	}{meta{UID: uid, OwnerReferences: []map[string]string{{"$patch": "delete", "uid": string(ownerUID)}}}})
}

// RecheckDeletionTimestamp returns a CanAdopt that fetches the controller
// fresh and refuses when it is being deleted.
func RecheckDeletionTimestamp(get func(context.Context) (metav1.Object, error)) func(context.Context) error {
	return func(ctx context.Context) error {
		obj, err := get(ctx)
		if err != nil {
			return fmt.Errorf("can't recheck DeletionTimestamp: %v", err)
		}
		if obj.GetDeletionTimestamp() != nil {
			return fmt.Errorf("%v/%v has just been deleted at %v", obj.GetNamespace(), obj.GetName(), obj.GetDeletionTimestamp())
		}
		return nil
	}
}
