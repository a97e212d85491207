package authz

import (
	"sort"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// StaticLister is an in-memory RBACLister, for tests and for serving the
// bootstrap policy before the API server's cache has synced. Its Get methods
// return the upstream NotFound errors. It never changes after construction, so it is safe for concurrent use.
type StaticLister struct {
	clusterRoles        map[string]*rbacv1.ClusterRole
	clusterRoleBindings map[string]*rbacv1.ClusterRoleBinding
	roles               map[string]*rbacv1.Role        // namespace/name
	roleBindings        map[string]*rbacv1.RoleBinding // namespace/name
}

// NewStaticLister returns a lister holding copies of the given objects.
func NewStaticLister(clusterRoles []*rbacv1.ClusterRole, clusterRoleBindings []*rbacv1.ClusterRoleBinding, roles []*rbacv1.Role, roleBindings []*rbacv1.RoleBinding) *StaticLister {
	l := &StaticLister{
		clusterRoles:        map[string]*rbacv1.ClusterRole{},
		clusterRoleBindings: map[string]*rbacv1.ClusterRoleBinding{},
		roles:               map[string]*rbacv1.Role{},
		roleBindings:        map[string]*rbacv1.RoleBinding{},
	}
	for _, o := range clusterRoles {
		l.clusterRoles[o.Name] = o.DeepCopy()
	}
	for _, o := range clusterRoleBindings {
		l.clusterRoleBindings[o.Name] = o.DeepCopy()
	}
	for _, o := range roles {
		l.roles[o.Namespace+"/"+o.Name] = o.DeepCopy()
	}
	for _, o := range roleBindings {
		l.roleBindings[o.Namespace+"/"+o.Name] = o.DeepCopy()
	}
	return l
}

// ListClusterRoleBindings implements RBACLister, sorted by name.
func (l *StaticLister) ListClusterRoleBindings() ([]*rbacv1.ClusterRoleBinding, error) {
	out := make([]*rbacv1.ClusterRoleBinding, 0, len(l.clusterRoleBindings))
	for _, o := range l.clusterRoleBindings {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// GetClusterRole implements RBACLister.
func (l *StaticLister) GetClusterRole(name string) (*rbacv1.ClusterRole, error) {
	if o, ok := l.clusterRoles[name]; ok {
		return o, nil
	}
	return nil, apierrors.NewNotFound(rbacv1.Resource("clusterrole"), name)
}

// ListRoleBindings implements RBACLister, sorted by name.
func (l *StaticLister) ListRoleBindings(namespace string) ([]*rbacv1.RoleBinding, error) {
	var out []*rbacv1.RoleBinding
	for _, o := range l.roleBindings {
		if o.Namespace == namespace {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// GetRole implements RBACLister.
func (l *StaticLister) GetRole(namespace, name string) (*rbacv1.Role, error) {
	if o, ok := l.roles[namespace+"/"+name]; ok {
		return o, nil
	}
	return nil, apierrors.NewNotFound(rbacv1.Resource("role"), name)
}
