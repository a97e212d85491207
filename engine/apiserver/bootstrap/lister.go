package bootstrap

import "github.com/podtrace/podtrace/engine/apiserver/authz"

// Lister returns the bootstrap policy as an authz.RBACLister, for tests and
// for authorizing requests before the API server's RBAC cache has synced.
func Lister() *authz.StaticLister {
	return authz.NewStaticLister(ClusterRoles(), ClusterRoleBindings(), nil, RoleBindings())
}
