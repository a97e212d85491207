// Package identity keeps the identities podtrace's components act as: the
// static token file kube-apiserver reads with --token-auth-file (the
// controller manager, the scheduler, one kubelet per node), stable across
// restarts on the same data directory.
package identity

import "k8s.io/apiserver/pkg/authentication/user"

// The control plane's own users, as kube-apiserver's bootstrap RBAC policy
// names them.
const (
	KubeScheduler         = user.KubeScheduler
	KubeControllerManager = user.KubeControllerManager
	NodesGroup            = user.NodesGroup
)

// User is one identity in the token file.
type User struct {
	// Name is the user name.
	Name string
	// UID identifies the user; may be empty.
	UID string
	// Groups are the user's groups.
	Groups []string
}

// NodeUser is the identity of the kubelet on node, as the Node authorizer
// and NodeRestriction expect it.
func NodeUser(node string) User {
	return User{Name: "system:node:" + node, Groups: []string{NodesGroup}}
}

// ComponentUsers returns the control plane's users and one kubelet per node.
func ComponentUsers(nodes ...string) []User {
	users := []User{{Name: KubeScheduler}, {Name: KubeControllerManager}}
	for _, n := range nodes {
		users = append(users, NodeUser(n))
	}
	return users
}
