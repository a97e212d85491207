package bootstrap

import (
	"context"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/podtrace/podtrace/engine/apiserver/authn"
	"github.com/podtrace/podtrace/engine/apiserver/authz"
)

// withAuthenticated mirrors the authn chain: every authenticated user also
// has system:authenticated.
func withAuthenticated(u authn.User) authn.User {
	u.Groups = append(u.Groups, authn.AllAuthenticated)
	return u
}

// TestComponentPermissions checks, with the real authorizer chain over the
// bootstrap policy, that each identity of docs/architecture.md can do what
// its component does and cannot do what it has no business doing.
func TestComponentPermissions(t *testing.T) {
	a := authz.New(Lister())
	var (
		admin     = withAuthenticated(authn.User{Name: "kubernetes-admin", Groups: []string{"system:masters"}})
		viewer    = withAuthenticated(authn.User{Name: "viewer"})
		scheduler = withAuthenticated(authn.User{Name: "system:kube-scheduler"})
		deployCtl = withAuthenticated(authn.ServiceAccountUser("kube-system", "deployment-controller"))
		rsCtl     = withAuthenticated(authn.ServiceAccountUser("kube-system", "replicaset-controller"))
		kubelet   = withAuthenticated(authn.NodeUser("node-1"))
		anonymous = *authn.AnonymousUser()
		stranger  = withAuthenticated(authn.User{Name: "bob"})
	)
	res := func(u authn.User, verb, group, resource, sub, ns, name string) authz.Attributes {
		return authz.Attributes{User: u, Verb: verb, ResourceRequest: true, APIGroup: group, APIVersion: "v1",
			Resource: resource, Subresource: sub, Namespace: ns, Name: name}
	}
	path := func(u authn.User, verb, p string) authz.Attributes {
		return authz.Attributes{User: u, Verb: verb, Path: p}
	}
	tests := []struct {
		name string
		a    authz.Attributes
		want bool
	}{
		{"admin deletes a node", res(admin, "delete", "", "nodes", "", "", "node-1"), true},
		{"admin reads /metrics", path(admin, "get", "/metrics"), true},

		{"viewer lists pods in default", res(viewer, "list", "", "pods", "", "default", ""), true},
		{"viewer reads pod logs in default", res(viewer, "get", "", "pods", "log", "default", "web-1"), true},
		{"viewer watches deployments in default", res(viewer, "watch", "apps", "deployments", "", "default", ""), true},
		{"viewer creates deployments", res(viewer, "create", "apps", "deployments", "", "default", ""), false},
		{"viewer deletes pods", res(viewer, "delete", "", "pods", "", "default", "web-1"), false},
		{"viewer reads secrets", res(viewer, "get", "", "secrets", "", "default", "token"), false},
		{"viewer lists pods in kube-system", res(viewer, "list", "", "pods", "", "kube-system", ""), false},
		{"viewer lists pods in all namespaces", res(viewer, "list", "", "pods", "", "", ""), false},
		{"viewer asks can-i", res(viewer, "create", "authorization.k8s.io", "selfsubjectaccessreviews", "", "", ""), true},
		{"viewer reads discovery", path(viewer, "get", "/apis/apps/v1"), true},

		{"scheduler binds a pod", res(scheduler, "create", "", "pods", "binding", "default", "web-1"), true},
		{"scheduler sets PodScheduled", res(scheduler, "patch", "", "pods", "status", "default", "web-1"), true},
		{"scheduler watches nodes", res(scheduler, "watch", "", "nodes", "", "", ""), true},
		{"scheduler watches pods", res(scheduler, "watch", "", "pods", "", "", ""), true},
		{"scheduler records events", res(scheduler, "create", "events.k8s.io", "events", "", "default", ""), true},
		{"scheduler renews its lease", res(scheduler, "update", "coordination.k8s.io", "leases", "", "kube-system", "kube-scheduler"), true},
		{"scheduler updates another lease", res(scheduler, "update", "coordination.k8s.io", "leases", "", "kube-system", "kube-controller-manager"), false},
		{"scheduler creates pods", res(scheduler, "create", "", "pods", "", "default", ""), false},
		{"scheduler updates nodes", res(scheduler, "update", "", "nodes", "", "", "node-1"), false},
		{"scheduler reads secrets", res(scheduler, "get", "", "secrets", "", "default", "token"), false},

		{"deployment controller creates replicasets", res(deployCtl, "create", "apps", "replicasets", "", "default", ""), true},
		{"deployment controller scales replicasets", res(deployCtl, "update", "apps", "replicasets", "", "default", "web-abc"), true},
		{"deployment controller updates deployment status", res(deployCtl, "update", "apps", "deployments", "status", "default", "web"), true},
		{"deployment controller records events", res(deployCtl, "create", "", "events", "", "default", ""), true},
		{"deployment controller creates pods", res(deployCtl, "create", "", "pods", "", "default", ""), false},
		{"deployment controller deletes deployments", res(deployCtl, "delete", "apps", "deployments", "", "default", "web"), false},

		{"replicaset controller creates pods", res(rsCtl, "create", "", "pods", "", "default", ""), true},
		{"replicaset controller deletes pods", res(rsCtl, "delete", "", "pods", "", "default", "web-abc-1"), true},
		{"replicaset controller updates replicaset status", res(rsCtl, "update", "apps", "replicasets", "status", "default", "web-abc"), true},
		{"replicaset controller records events", res(rsCtl, "patch", "", "events", "", "default", "e"), true},
		{"replicaset controller deletes nodes", res(rsCtl, "delete", "", "nodes", "", "", "node-1"), false},
		{"replicaset controller binds pods", res(rsCtl, "create", "", "pods", "binding", "default", "web-abc-1"), false},
		{"replicaset controller creates deployments", res(rsCtl, "create", "apps", "deployments", "", "default", ""), false},

		{"kubelet registers its node", res(kubelet, "create", "", "nodes", "", "", ""), true},
		{"kubelet updates node status", res(kubelet, "patch", "", "nodes", "status", "", "node-1"), true},
		{"kubelet renews its lease", res(kubelet, "update", "coordination.k8s.io", "leases", "", "kube-node-lease", "node-1"), true},
		{"kubelet watches pods", res(kubelet, "watch", "", "pods", "", "", ""), true},
		{"kubelet updates pod status", res(kubelet, "update", "", "pods", "status", "default", "web-1"), true},
		{"kubelet reads a secret", res(kubelet, "get", "", "secrets", "", "default", "token"), true},
		{"kubelet reads a configmap", res(kubelet, "get", "", "configmaps", "", "default", "cfg"), true},
		{"kubelet records events", res(kubelet, "create", "", "events", "", "default", ""), true},
		{"kubelet deletes a node", res(kubelet, "delete", "", "nodes", "", "", "node-2"), false},
		{"kubelet updates a pod spec", res(kubelet, "update", "", "pods", "", "default", "web-1"), false},
		{"kubelet binds pods", res(kubelet, "create", "", "pods", "binding", "default", "web-1"), false},
		{"kubelet writes deployments", res(kubelet, "update", "apps", "deployments", "", "default", "web"), false},

		{"anonymous gets /version", path(anonymous, "get", "/version"), true},
		{"anonymous gets /healthz", path(anonymous, "get", "/healthz"), true},
		{"anonymous gets /api", path(anonymous, "get", "/api"), true},
		{"anonymous gets /apis/apps/v1", path(anonymous, "get", "/apis/apps/v1"), true},
		{"anonymous posts to /api", path(anonymous, "post", "/api"), false},
		{"anonymous gets /metrics", path(anonymous, "get", "/metrics"), false},
		{"anonymous lists pods", res(anonymous, "list", "", "pods", "", "default", ""), false},
		{"anonymous asks can-i", res(anonymous, "create", "authorization.k8s.io", "selfsubjectaccessreviews", "", "", ""), false},

		{"unbound user lists pods", res(stranger, "list", "", "pods", "", "default", ""), false},
		{"unbound user reads /version", path(stranger, "get", "/version"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, reason, err := a.Authorize(context.Background(), tt.a)
			if err != nil {
				t.Fatalf("Authorize: %v", err)
			}
			if got := d == authz.DecisionAllow; got != tt.want {
				t.Errorf("allowed = %v (%s), want %v", got, reason, tt.want)
			}
		})
	}
}

// TestViewerForbiddenMessage is what `kubectl create` as the viewer shows.
func TestViewerForbiddenMessage(t *testing.T) {
	attrs := authz.Attributes{User: withAuthenticated(authn.User{Name: "viewer"}), Verb: "create", ResourceRequest: true,
		APIGroup: "apps", APIVersion: "v1", Resource: "deployments", Namespace: "default"}
	d, reason, _ := authz.New(Lister()).Authorize(context.Background(), attrs)
	if d == authz.DecisionAllow {
		t.Fatal("viewer may create deployments")
	}
	want := `deployments.apps is forbidden: User "viewer" cannot create resource "deployments" in API group "apps" in the namespace "default"`
	if got := authz.Forbidden(attrs, reason).Error(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestCanI is `kubectl auth can-i` for both kubeconfig users.
func TestCanI(t *testing.T) {
	a := authz.New(Lister())
	canI := func(u authn.User, verb, resource, ns string) bool {
		spec := authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: verb, Resource: resource, Namespace: ns}}
		return authz.Review(context.Background(), a, spec, u).Allowed
	}
	admin := withAuthenticated(authn.User{Name: "kubernetes-admin", Groups: []string{"system:masters"}})
	viewer := withAuthenticated(authn.User{Name: "viewer"})
	if !canI(admin, "create", "pods", "default") || !canI(admin, "delete", "nodes", "") {
		t.Error("admin cannot do everything")
	}
	if !canI(viewer, "get", "pods", "default") {
		t.Error("viewer cannot get pods in default")
	}
	if canI(viewer, "create", "pods", "default") {
		t.Error("viewer can create pods")
	}
}
