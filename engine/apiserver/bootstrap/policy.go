// Package bootstrap is the RBAC policy the embedded API server starts with:
// the subset of kube-apiserver 1.36's bootstrap roles and bindings that
// podtrace's users and components need (plugin/pkg/auth/authorizer/rbac/
// bootstrappolicy), rule for rule, plus the binding that makes the viewer
// user read-only in the default namespace. Every object carries upstream's
// kubernetes.io/bootstrapping label and autoupdate annotation.
//
// Two deliberate differences from upstream, both documented at their
// binding: system:node is bound to the system:nodes group (podtrace has no
// Node authorizer), and system:discovery is also bound to
// system:unauthenticated (anonymous requests may read discovery).
package bootstrap

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/engine/apiserver/authn"
)

// Upstream's verb sets.
var (
	write     = []string{"create", "update", "patch", "delete", "deletecollection"}
	readWrite = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
	read      = []string{"get", "list", "watch"}
	readUpd   = []string{"get", "list", "watch", "update", "patch"}
)

// Labels and annotations of every bootstrap object, as upstream sets them.
const (
	// BootstrappingLabel marks objects created by the API server's bootstrap.
	BootstrappingLabel = "kubernetes.io/bootstrapping"
	// BootstrappingValue is BootstrappingLabel's value.
	BootstrappingValue = "rbac-defaults"
)

const (
	legacyGroup         = ""
	appsGroup           = "apps"
	authenticationGroup = "authentication.k8s.io"
	authorizationGroup  = "authorization.k8s.io"
	autoscalingGroup    = "autoscaling"
	batchGroup          = "batch"
	certificatesGroup   = "certificates.k8s.io"
	coordinationGroup   = "coordination.k8s.io"
	discoveryGroup      = "discovery.k8s.io"
	extensionsGroup     = "extensions"
	policyGroup         = "policy"
	rbacGroup           = "rbac.authorization.k8s.io"
	resourceGroup       = "resource.k8s.io"
	storageGroup        = "storage.k8s.io"
	networkingGroup     = "networking.k8s.io"
	eventsGroup         = "events.k8s.io"
	nodeGroup           = "node.k8s.io"
)

// Names of roles other packages refer to.
const (
	// ViewRole is the read-only ClusterRole bound to the viewer user.
	ViewRole = "view"
	// ViewerBinding is the RoleBinding of the viewer user in its namespace.
	ViewerBinding = "podtrace-viewer"
	// ViewerNamespace is where the viewer user may read.
	ViewerNamespace = "default"
	// ViewerUser is the limited user of the kubeconfig.
	ViewerUser = "viewer"
	// saRolePrefix starts the name of every controller's ClusterRole.
	saRolePrefix = "system:controller:"
)

// ClusterRoles returns the bootstrap ClusterRoles, admin/edit/view with their
// aggregated rules already filled in (podtrace runs no aggregation
// controller; the result is what kube-controller-manager's would write).
// Each call returns new objects.
func ClusterRoles() []*rbacv1.ClusterRole {
	roles := []*rbacv1.ClusterRole{
		clusterRole("cluster-admin", nil,
			newRule("*").groups("*").resources("*").build(),
			newRule("*").urls("*").build(),
		),
		clusterRole("system:discovery", nil,
			newRule("get").urls(
				"/livez", "/readyz", "/healthz",
				"/version", "/version/",
				"/openapi", "/openapi/*",
				"/api", "/api/*",
				"/apis", "/apis/*",
			).build(),
		),
		clusterRole("system:basic-user", nil,
			newRule("create").groups(authorizationGroup).resources("selfsubjectaccessreviews", "selfsubjectrulesreviews").build(),
			newRule("create").groups(authenticationGroup).resources("selfsubjectreviews").build(),
		),
		clusterRole("system:public-info-viewer", nil,
			newRule("get").urls("/livez", "/readyz", "/healthz", "/version", "/version/").build(),
		),
		aggregatedRole("admin", nil, "rbac.authorization.k8s.io/aggregate-to-admin"),
		aggregatedRole("edit", map[string]string{"rbac.authorization.k8s.io/aggregate-to-admin": "true"}, "rbac.authorization.k8s.io/aggregate-to-edit"),
		aggregatedRole("view", map[string]string{"rbac.authorization.k8s.io/aggregate-to-edit": "true"}, "rbac.authorization.k8s.io/aggregate-to-view"),
		clusterRole("system:aggregate-to-admin", map[string]string{"rbac.authorization.k8s.io/aggregate-to-admin": "true"},
			newRule("create").groups(authorizationGroup).resources("localsubjectaccessreviews").build(),
			newRule(readWrite...).groups(rbacGroup).resources("roles", "rolebindings").build(),
		),
		clusterRole("system:aggregate-to-edit", map[string]string{"rbac.authorization.k8s.io/aggregate-to-edit": "true"}, editRules()...),
		clusterRole("system:aggregate-to-view", map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}, viewRules()...),
		clusterRole("system:node", nil, nodeRules()...),
		clusterRole("system:kube-scheduler", nil, schedulerRules()...),
		clusterRole("system:kube-controller-manager", nil, controllerManagerRules()...),
		clusterRole(saRolePrefix+"deployment-controller", nil,
			newRule("get", "list", "watch", "update").groups(extensionsGroup, appsGroup).resources("deployments").build(),
			newRule("update").groups(extensionsGroup, appsGroup).resources("deployments/status").build(),
			newRule("update").groups(extensionsGroup, appsGroup).resources("deployments/finalizers").build(),
			newRule("get", "list", "watch", "create", "update", "patch", "delete").groups(appsGroup, extensionsGroup).resources("replicasets").build(),
			newRule("get", "list", "watch", "update").groups(legacyGroup).resources("pods").build(),
			eventsRule(),
		),
		clusterRole(saRolePrefix+"replicaset-controller", nil,
			newRule("get", "list", "watch", "update").groups(appsGroup, extensionsGroup).resources("replicasets").build(),
			newRule("update").groups(appsGroup, extensionsGroup).resources("replicasets/status").build(),
			newRule("update").groups(appsGroup, extensionsGroup).resources("replicasets/finalizers").build(),
			newRule("list", "watch", "patch", "create", "delete").groups(legacyGroup).resources("pods").build(),
			eventsRule(),
		),
		clusterRole(saRolePrefix+"job-controller", nil,
			newRule("get", "list", "watch", "update", "patch").groups(batchGroup).resources("jobs").build(),
			newRule("update").groups(batchGroup).resources("jobs/status").build(),
			newRule("update").groups(batchGroup).resources("jobs/finalizers").build(),
			newRule("list", "watch", "create", "delete", "patch").groups(legacyGroup).resources("pods").build(),
			eventsRule(),
		),
		clusterRole(saRolePrefix+"endpoint-controller", nil,
			newRule("get", "list", "watch").groups(legacyGroup).resources("services", "pods").build(),
			newRule("get", "list", "watch", "create", "update", "delete").groups(legacyGroup).resources("endpoints").build(),
			newRule("create").groups(legacyGroup).resources("endpoints/restricted").build(),
			eventsRule(),
		),
		clusterRole(saRolePrefix+"endpointslice-controller", nil,
			newRule("get", "list", "watch").groups(legacyGroup).resources("services", "pods", "nodes").build(),
			// to set blockOwnerDeletion on the slices' owner reference to the Service
			newRule("update").groups(legacyGroup).resources("services/finalizers").build(),
			newRule("get", "list", "watch", "create", "update", "delete").groups(discoveryGroup).resources("endpointslices").build(),
			eventsRule(),
		),
		clusterRole(saRolePrefix+"generic-garbage-collector", nil,
			newRule("get", "list", "watch", "patch", "update", "delete").groups("*").resources("*").build(),
			eventsRule(),
		),
		clusterRole(saRolePrefix+"service-account-controller", nil,
			newRule("create").groups(legacyGroup).resources("serviceaccounts").build(),
			eventsRule(),
		),
		clusterRole(saRolePrefix+"namespace-controller", nil,
			newRule("delete", "get", "list", "watch").groups(legacyGroup).resources("namespaces").build(),
			newRule("update").groups(legacyGroup).resources("namespaces/finalize", "namespaces/status").build(),
			newRule("delete", "deletecollection", "get", "list", "watch").groups("*").resources("*").build(),
		),
		clusterRole(saRolePrefix+"root-ca-cert-publisher", nil,
			newRule("create", "update").groups(legacyGroup).resources("configmaps").build(),
			eventsRule(),
		),
	}
	Aggregate(roles)
	return roles
}

// ClusterRoleBindings returns the bootstrap ClusterRoleBindings.
func ClusterRoleBindings() []*rbacv1.ClusterRoleBinding {
	return []*rbacv1.ClusterRoleBinding{
		clusterBinding("cluster-admin", group(authn.SystemPrivilegedGroup)),
		// Upstream binds system:discovery to authenticated users only;
		// podtrace lets anonymous requests read discovery too, as kubectl
		// and the workshop's curl examples expect (issue 2).
		clusterBinding("system:discovery", group(authn.AllAuthenticated), group(authn.AllUnauthenticated)),
		clusterBinding("system:basic-user", group(authn.AllAuthenticated)),
		clusterBinding("system:public-info-viewer", group(authn.AllAuthenticated), group(authn.AllUnauthenticated)),
		clusterBinding("system:kube-scheduler", user(authn.KubeScheduler)),
		clusterBinding("system:kube-controller-manager", user(authn.KubeControllerManager)),
		// Upstream leaves this binding without subjects and lets the Node
		// authorizer serve kubelets; podtrace has no Node authorizer, so
		// kubelets get the role through their group.
		clusterBinding("system:node", group(authn.NodesGroup)),
		clusterBinding(saRolePrefix+"deployment-controller", serviceAccount("kube-system", "deployment-controller")),
		clusterBinding(saRolePrefix+"replicaset-controller", serviceAccount("kube-system", "replicaset-controller")),
		clusterBinding(saRolePrefix+"job-controller", serviceAccount("kube-system", "job-controller")),
		clusterBinding(saRolePrefix+"endpoint-controller", serviceAccount("kube-system", "endpoint-controller")),
		clusterBinding(saRolePrefix+"endpointslice-controller", serviceAccount("kube-system", "endpointslice-controller")),
		clusterBinding(saRolePrefix+"generic-garbage-collector", serviceAccount("kube-system", "generic-garbage-collector")),
		clusterBinding(saRolePrefix+"service-account-controller", serviceAccount("kube-system", "service-account-controller")),
		clusterBinding(saRolePrefix+"root-ca-cert-publisher", serviceAccount("kube-system", "root-ca-cert-publisher")),
		clusterBinding(saRolePrefix+"namespace-controller", serviceAccount("kube-system", "namespace-controller")),
		// podtrace runs both as one controller under one identity.
		podtraceBinding("podtrace:namespace-defaults:service-account-controller", saRolePrefix+"service-account-controller", serviceAccount("kube-system", "namespace-defaults")),
		podtraceBinding("podtrace:namespace-defaults:root-ca-cert-publisher", saRolePrefix+"root-ca-cert-publisher", serviceAccount("kube-system", "namespace-defaults")),
	}
}

// RoleBindings returns the bootstrap RoleBindings: the viewer user bound to
// ClusterRole view in namespace default.
func RoleBindings() []*rbacv1.RoleBinding {
	meta := defaultMeta(ViewerBinding, nil)
	meta.Namespace = ViewerNamespace
	return []*rbacv1.RoleBinding{{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
		ObjectMeta: meta,
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ViewRole},
		Subjects:   []rbacv1.Subject{user(ViewerUser)},
	}}
}

func defaultMeta(name string, labels map[string]string) metav1.ObjectMeta {
	l := map[string]string{BootstrappingLabel: BootstrappingValue}
	for k, v := range labels {
		l[k] = v
	}
	return metav1.ObjectMeta{
		Name:        name,
		Labels:      l,
		Annotations: map[string]string{rbacv1.AutoUpdateAnnotationKey: "true"},
	}
}

func clusterRole(name string, labels map[string]string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: defaultMeta(name, labels),
		Rules:      rules,
	}
}

func aggregatedRole(name string, labels map[string]string, aggregateLabel string) *rbacv1.ClusterRole {
	r := clusterRole(name, labels)
	r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
		{MatchLabels: map[string]string{aggregateLabel: "true"}},
	}}
	return r
}

func clusterBinding(role string, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
		ObjectMeta: defaultMeta(role, nil),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   subjects,
	}
}

// podtraceBinding binds role under a binding name of podtrace's own.
func podtraceBinding(name, role string, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	b := clusterBinding(role, subjects...)
	b.Name = name
	return b
}

func group(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
}

func user(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

func serviceAccount(namespace, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}
}
