package apiserver

import (
	"context"
	"net/http"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podtrace/podtrace/engine/apiserver/authz"
)

// selfSubjectAccessReview answers `kubectl auth can-i`.
func (s *Server) selfSubjectAccessReview(w http.ResponseWriter, r *http.Request, rt *requestTrace) {
	res := &Resource{GVR: authorizationv1.SchemeGroupVersion.WithResource("selfsubjectaccessreviews"),
		Kind: "SelfSubjectAccessReview", New: func() runtime.Object { return &authorizationv1.SelfSubjectAccessReview{} }}
	acc, obj, ok := decodeReview(w, r, res)
	if !ok {
		return
	}
	review := obj.(*authorizationv1.SelfSubjectAccessReview)
	if (review.Spec.ResourceAttributes == nil) == (review.Spec.NonResourceAttributes == nil) {
		writeError(w, acc.format, apierrors.NewInvalid(schema.GroupKind{Group: "authorization.k8s.io", Kind: "SelfSubjectAccessReview"}, "", nil))
		return
	}
	review.Status = authz.Review(r.Context(), s.cfg.Authorizer, review.Spec, *rt.user)
	review.SetGroupVersionKind(res.GVK())
	writeObject(w, acc.format, http.StatusCreated, review)
}

// decodeReview reads a review request (an object that is computed, never
// stored) in the negotiated format; on failure it has written the error.
func decodeReview(w http.ResponseWriter, r *http.Request, res *Resource) (accepted, runtime.Object, bool) {
	acc, err := negotiate(r, false)
	if err != nil {
		writeError(w, nil, err)
		return acc, nil, false
	}
	data, err := readBody(r)
	if err == nil {
		var obj runtime.Object
		if obj, _, err = decodeObject(r, res, data); err == nil {
			return acc, obj, true
		}
	}
	writeError(w, acc.format, err)
	return acc, nil, false
}

// RBACLister serves RBAC objects to the authorizer from the watch caches.
func (s *Server) RBACLister() authz.RBACLister { return rbacLister{s} }

type rbacLister struct{ s *Server }

func (l rbacLister) cache(resource string) *cacher {
	return l.s.cachers[l.s.resources["rbac.authorization.k8s.io/"+resource]]
}

func (l rbacLister) ListClusterRoleBindings() ([]*rbacv1.ClusterRoleBinding, error) {
	objs, _, err := l.cache("clusterrolebindings").list(context.Background(), predicate{})
	out := make([]*rbacv1.ClusterRoleBinding, len(objs))
	for i, o := range objs {
		out[i] = o.(*rbacv1.ClusterRoleBinding)
	}
	return out, err
}

func (l rbacLister) GetClusterRole(name string) (*rbacv1.ClusterRole, error) {
	if o := l.cache("clusterroles").get("", name); o != nil {
		return o.(*rbacv1.ClusterRole), nil
	}
	return nil, apierrors.NewNotFound(rbacv1.Resource("clusterrole"), name)
}

func (l rbacLister) ListRoleBindings(namespace string) ([]*rbacv1.RoleBinding, error) {
	objs, _, err := l.cache("rolebindings").list(context.Background(), predicate{namespace: namespace})
	out := make([]*rbacv1.RoleBinding, len(objs))
	for i, o := range objs {
		out[i] = o.(*rbacv1.RoleBinding)
	}
	return out, err
}

func (l rbacLister) GetRole(namespace, name string) (*rbacv1.Role, error) {
	if o := l.cache("roles").get(namespace, name); o != nil {
		return o.(*rbacv1.Role), nil
	}
	return nil, apierrors.NewNotFound(rbacv1.Resource("role"), name)
}

// Store gives admission plugins read access to stored objects and lets them
// update status (ResourceQuota usage) with optimistic concurrency.
func (s *Server) Store() *ObjectStore { return &ObjectStore{s: s} }

// ObjectStore is the server's storage as admission plugins see it.
type ObjectStore struct{ s *Server }

func (o *ObjectStore) resource(plural string) (*Resource, error) {
	for _, r := range o.s.ordered {
		if r.GVR.Resource == plural {
			return r, nil
		}
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: plural}, "")
}

// Get reads one object from the watch cache, as admission plugins read
// through informer listers in kube-apiserver, and from etcd when the cache
// has not seen it yet (an object created a moment before, in the same manifest).
func (o *ObjectStore) Get(ctx context.Context, resource, namespace, name string) (runtime.Object, error) {
	r, err := o.resource(resource)
	if err != nil {
		return nil, err
	}
	if obj := o.s.cachers[r].get(namespace, name); obj != nil {
		return obj, nil
	}
	return o.s.stores[r].get(ctx, namespace, name)
}

// List returns the namespace's objects from the watch cache.
func (o *ObjectStore) List(ctx context.Context, resource, namespace string) ([]runtime.Object, error) {
	r, err := o.resource(resource)
	if err != nil {
		return nil, err
	}
	objs, _, err := o.s.cachers[r].list(ctx, predicate{namespace: namespace})
	return objs, err
}

// UpdateStatus writes obj's status if obj's resourceVersion is current (409 otherwise).
func (o *ObjectStore) UpdateStatus(ctx context.Context, resource string, obj runtime.Object) (runtime.Object, error) {
	r, err := o.resource(resource)
	if err != nil {
		return nil, err
	}
	ns, name := objectNamespaceName(obj)
	want := mustRV(obj)
	return o.s.stores[r].update(ctx, ns, name, o.s.hint(r, ns, name), func(cur runtime.Object) (runtime.Object, error) {
		if mustRV(cur) != want {
			return nil, conflict(r, name)
		}
		next := obj.DeepCopyObject()
		prepareUpdate(next, cur, "status")
		return next, nil
	})
}
