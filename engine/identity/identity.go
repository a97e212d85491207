// Package identity names the identities podtrace's components act as (the
// controller manager, the scheduler, one kubelet per node), as upstream's
// bootstrap RBAC policy, the Node authorizer and NodeRestriction expect
// them. Each gets a client certificate from the cluster CA, as kubeadm
// gives them (engine/pki).
package identity

import "k8s.io/apiserver/pkg/authentication/user"

// The control plane's own users, as kube-apiserver's bootstrap RBAC policy
// names them.
const (
	KubeScheduler         = user.KubeScheduler
	KubeControllerManager = user.KubeControllerManager
	NodesGroup            = user.NodesGroup
)

// User is one identity: the certificate's common name and organizations.
type User struct {
	// Name is the user name.
	Name string
	// Groups are the user's groups.
	Groups []string
}

// NodeUser is the identity of the kubelet on node, as the Node authorizer
// and NodeRestriction expect it.
func NodeUser(node string) User {
	return User{Name: "system:node:" + node, Groups: []string{NodesGroup}}
}
