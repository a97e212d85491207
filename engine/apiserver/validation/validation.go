// Package validation checks objects the way kube-apiserver 1.36 does before
// it persists them, returning field errors with upstream's field paths, error
// types and detail strings. The API server wraps the list with
// apierrors.NewInvalid(groupKind, name, errs) for the 422 body kubectl prints,
// e.g. `The Pod "x" is invalid: spec.containers: Required value`.
//
// Objects must be defaulted first (engine/apiserver/defaults), as upstream
// validates the defaulted internal object.
package validation

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateCreate validates obj for a create. Kinds without rules pass with
// only their metadata checked, when they have metadata.
func ValidateCreate(obj runtime.Object) field.ErrorList {
	switch o := obj.(type) {
	case *corev1.Pod:
		return Pod(o)
	case *appsv1.Deployment:
		return Deployment(o)
	case *appsv1.ReplicaSet:
		return ReplicaSet(o)
	case *corev1.Namespace:
		return Namespace(o)
	case *corev1.Node:
		return Node(o)
	case *corev1.ConfigMap:
		return ConfigMap(o)
	case *corev1.Secret:
		return Secret(o)
	case *corev1.ServiceAccount:
		return ServiceAccount(o)
	case *corev1.ResourceQuota:
		return ResourceQuota(o)
	case *corev1.LimitRange:
		return LimitRange(o)
	case *corev1.Event:
		return Event(o)
	case *corev1.Service:
		return Service(o)
	case *batchv1.Job:
		return Job(o)
	case *discoveryv1.EndpointSlice:
		return EndpointSlice(o)
	case *corev1.Endpoints:
		return Endpoints(o)
	case *coordinationv1.Lease:
		return Lease(o)
	case *rbacv1.Role:
		return Role(o)
	case *rbacv1.ClusterRole:
		return ClusterRole(o)
	case *rbacv1.RoleBinding:
		return RoleBinding(o)
	case *rbacv1.ClusterRoleBinding:
		return ClusterRoleBinding(o)
	}
	return nil
}

// ValidateUpdate validates obj replacing old. Both must be the same kind.
// The metadata update rules (immutable name, namespace, uid,
// creationTimestamp) apply to every kind.
func ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	switch o := obj.(type) {
	case *corev1.Pod:
		if p, ok := old.(*corev1.Pod); ok {
			return PodUpdate(o, p)
		}
	case *appsv1.Deployment:
		if p, ok := old.(*appsv1.Deployment); ok {
			return DeploymentUpdate(o, p)
		}
	case *appsv1.ReplicaSet:
		if p, ok := old.(*appsv1.ReplicaSet); ok {
			return ReplicaSetUpdate(o, p)
		}
	case *corev1.Secret:
		if p, ok := old.(*corev1.Secret); ok {
			return SecretUpdate(o, p)
		}
	case *corev1.Service:
		if p, ok := old.(*corev1.Service); ok {
			return dedupe(ServiceUpdate(o, p))
		}
	case *batchv1.Job:
		if p, ok := old.(*batchv1.Job); ok {
			return JobUpdate(o, p)
		}
	case *corev1.ConfigMap:
		if p, ok := old.(*corev1.ConfigMap); ok {
			return ConfigMapUpdate(o, p)
		}
	case *rbacv1.RoleBinding:
		if p, ok := old.(*rbacv1.RoleBinding); ok {
			return append(metaUpdate(obj, old), append(RoleBinding(o), roleRefChanged(o.RoleRef, p.RoleRef)...)...)
		}
	case *rbacv1.ClusterRoleBinding:
		if p, ok := old.(*rbacv1.ClusterRoleBinding); ok {
			return append(metaUpdate(obj, old), append(ClusterRoleBinding(o), roleRefChanged(o.RoleRef, p.RoleRef)...)...)
		}
	}
	allErrs := metaUpdate(obj, old)
	// Other kinds re-run their create rules on the new object, minus the
	// metadata checks already done above (which would only repeat).
	allErrs = append(allErrs, ValidateCreate(obj)...)
	return dedupe(allErrs)
}

func metaUpdate(obj, old runtime.Object) field.ErrorList {
	newMeta, err1 := meta.Accessor(obj)
	oldMeta, err2 := meta.Accessor(old)
	if err1 != nil || err2 != nil {
		return nil
	}
	return apimachineryvalidation.ValidateObjectMetaAccessorUpdate(newMeta, oldMeta, field.NewPath("metadata"))
}

func dedupe(errs field.ErrorList) field.ErrorList {
	seen := map[string]bool{}
	out := field.ErrorList{}
	for _, e := range errs {
		if seen[e.Error()] {
			continue
		}
		seen[e.Error()] = true
		out = append(out, e)
	}
	return out
}
