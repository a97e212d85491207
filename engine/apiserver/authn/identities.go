package authn

import "strings"

// Service account naming, as in k8s.io/apiserver/pkg/authentication/serviceaccount.
const (
	// ServiceAccountUsernamePrefix starts every service account user name.
	ServiceAccountUsernamePrefix = "system:serviceaccount:"
	// AllServiceAccountsGroup is the group of every service account.
	AllServiceAccountsGroup = "system:serviceaccounts"
	// ServiceAccountGroupPrefix starts the per-namespace service account group.
	ServiceAccountGroupPrefix = "system:serviceaccounts:"
	// NodeUsernamePrefix starts every kubelet's user name.
	NodeUsernamePrefix = "system:node:"
)

// ServiceAccountUsername returns "system:serviceaccount:<namespace>:<name>".
func ServiceAccountUsername(namespace, name string) string {
	return ServiceAccountUsernamePrefix + namespace + ":" + name
}

// SplitServiceAccountUsername returns the namespace and name of a service
// account user name, and false for any other user name.
func SplitServiceAccountUsername(username string) (namespace, name string, ok bool) {
	rest, ok := strings.CutPrefix(username, ServiceAccountUsernamePrefix)
	if !ok {
		return "", "", false
	}
	namespace, name, ok = strings.Cut(rest, ":")
	if !ok || namespace == "" || name == "" || strings.Contains(name, ":") {
		return "", "", false
	}
	return namespace, name, true
}

// ServiceAccountUser is the identity of a service account, with the groups
// kube-apiserver gives service account tokens.
func ServiceAccountUser(namespace, name string) User {
	return User{
		Name:   ServiceAccountUsername(namespace, name),
		Groups: []string{AllServiceAccountsGroup, ServiceAccountGroupPrefix + namespace},
	}
}

// NodeUser is the identity of the kubelet on node.
func NodeUser(node string) User {
	return User{Name: NodeUsernamePrefix + node, Groups: []string{NodesGroup}}
}

// ComponentUsers returns the identities of podtrace's components (see
// docs/architecture.md): the scheduler, the deployment and replicaset
// controllers, and one kubelet per node.
func ComponentUsers(nodes ...string) []User {
	users := []User{
		{Name: KubeScheduler},
		{Name: KubeControllerManager},
		ServiceAccountUser("kube-system", "deployment-controller"),
		ServiceAccountUser("kube-system", "replicaset-controller"),
	}
	for _, node := range nodes {
		users = append(users, NodeUser(node))
	}
	return users
}
