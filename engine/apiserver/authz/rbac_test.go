package authz

import (
	"context"
	"errors"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podtrace/podtrace/engine/apiserver/authn"
)

func ref(kind, name string) rbacv1.RoleRef {
	return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: name}
}

func testLister() *StaticLister {
	podReader := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"},
		Rules: []rbacv1.PolicyRule{{Verbs: l("get", "list", "watch"), APIGroups: l(""), Resources: l("pods")}}}
	editor := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "editor", Namespace: "ns1"},
		Rules: []rbacv1.PolicyRule{{Verbs: l("create"), APIGroups: l(""), Resources: l("pods")}}}
	return NewStaticLister(
		[]*rbacv1.ClusterRole{podReader},
		[]*rbacv1.ClusterRoleBinding{
			{ObjectMeta: metav1.ObjectMeta{Name: "readers"}, RoleRef: ref("ClusterRole", "pod-reader"),
				Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "nobody"}, {Kind: rbacv1.GroupKind, Name: "devs"}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "broken"}, RoleRef: ref("ClusterRole", "gone"),
				Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "bob"}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "sa-reader"}, RoleRef: ref("ClusterRole", "pod-reader"),
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "watcher", Namespace: "mon"}}},
		},
		[]*rbacv1.Role{editor},
		[]*rbacv1.RoleBinding{
			{ObjectMeta: metav1.ObjectMeta{Name: "edit-sa", Namespace: "ns1"}, RoleRef: ref("Role", "editor"),
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "builder"}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "carol-reads", Namespace: "ns2"}, RoleRef: ref("ClusterRole", "pod-reader"),
				Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "carol"}}},
		},
	)
}

func TestRBACAuthorize(t *testing.T) {
	rbac := NewRBAC(testLister())
	dev := authn.User{Name: "dana", Groups: l("devs", "system:authenticated")}
	builder := authn.User{Name: "system:serviceaccount:ns1:builder"}
	watcher := authn.User{Name: "system:serviceaccount:mon:watcher"}
	carol := authn.User{Name: "carol"}
	bob := authn.User{Name: "bob"}
	pods := func(u authn.User, verb, ns string) Attributes {
		return Attributes{User: u, Verb: verb, ResourceRequest: true, Resource: "pods", Namespace: ns, APIVersion: "v1"}
	}
	tests := []struct {
		name       string
		a          Attributes
		want       Decision
		wantReason string
	}{
		{"group via cluster binding", pods(dev, "list", "default"), DecisionAllow,
			`RBAC: allowed by ClusterRoleBinding "readers" of ClusterRole "pod-reader" to Group "devs"`},
		{"group verb not granted", pods(dev, "delete", "default"), DecisionNoOpinion, ""},
		{"service account in role binding without namespace", pods(builder, "create", "ns1"), DecisionAllow,
			`RBAC: allowed by RoleBinding "edit-sa/ns1" of Role "editor" to ServiceAccount "builder/ns1"`},
		{"role binding does not reach another namespace", pods(builder, "create", "ns2"), DecisionNoOpinion, ""},
		{"service account in cluster binding", pods(watcher, "watch", ""), DecisionAllow,
			`RBAC: allowed by ClusterRoleBinding "sa-reader" of ClusterRole "pod-reader" to ServiceAccount "watcher/mon"`},
		{"same SA name in another namespace", pods(authn.User{Name: "system:serviceaccount:other:watcher"}, "watch", ""), DecisionNoOpinion, ""},
		{"cluster role bound in one namespace", pods(carol, "get", "ns2"), DecisionAllow,
			`RBAC: allowed by RoleBinding "carol-reads/ns2" of ClusterRole "pod-reader" to User "carol"`},
		{"namespaced grant is not cluster-wide", pods(carol, "list", ""), DecisionNoOpinion, ""},
		{"missing role is reported", pods(bob, "get", "default"), DecisionNoOpinion,
			`RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason, err := rbac.Authorize(context.Background(), tt.a)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want || reason != tt.wantReason {
				t.Errorf("Authorize = %v %q, want %v %q", got, reason, tt.want, tt.wantReason)
			}
		})
	}
}

func TestRBACListerErrors(t *testing.T) {
	failing := fakeLister{
		listClusterRoleBindings: func() ([]*rbacv1.ClusterRoleBinding, error) { return nil, errors.New("cache not synced") },
		listRoleBindings:        func(string) ([]*rbacv1.RoleBinding, error) { return nil, errors.New("cache not synced") },
	}
	_, reason, _ := NewRBAC(failing).Authorize(context.Background(), Attributes{User: authn.User{Name: "x"}, Verb: "get", ResourceRequest: true, Resource: "pods", Namespace: "default"})
	if reason != "RBAC: cache not synced" {
		t.Errorf("reason = %q, want duplicate errors collapsed as utilerrors.Aggregate does", reason)
	}
}

type fakeLister struct {
	listClusterRoleBindings func() ([]*rbacv1.ClusterRoleBinding, error)
	getClusterRole          func(string) (*rbacv1.ClusterRole, error)
	listRoleBindings        func(string) ([]*rbacv1.RoleBinding, error)
	getRole                 func(string, string) (*rbacv1.Role, error)
}

func (f fakeLister) ListClusterRoleBindings() ([]*rbacv1.ClusterRoleBinding, error) {
	return f.listClusterRoleBindings()
}
func (f fakeLister) GetClusterRole(n string) (*rbacv1.ClusterRole, error) { return f.getClusterRole(n) }
func (f fakeLister) ListRoleBindings(ns string) ([]*rbacv1.RoleBinding, error) {
	return f.listRoleBindings(ns)
}
func (f fakeLister) GetRole(ns, n string) (*rbacv1.Role, error) { return f.getRole(ns, n) }

func TestUnionAndMasters(t *testing.T) {
	deny := AuthorizerFunc(func(context.Context, Attributes) (Decision, string, error) { return DecisionDeny, "denied", nil })
	quiet := AuthorizerFunc(func(context.Context, Attributes) (Decision, string, error) {
		return DecisionNoOpinion, "no rule", errors.New("e1")
	})
	admin := Attributes{User: authn.User{Name: "kubernetes-admin", Groups: l("system:masters", "system:authenticated")}, Verb: "delete", ResourceRequest: true, Resource: "nodes"}
	if d, _, _ := New(testLister()).Authorize(context.Background(), admin); d != DecisionAllow {
		t.Errorf("system:masters member: %v, want allow", d)
	}
	if d, reason, _ := (Union{deny, PrivilegedGroups("system:masters")}).Authorize(context.Background(), admin); d != DecisionDeny || reason != "denied" {
		t.Errorf("deny first: %v %q, want the deny to win", d, reason)
	}
	d, reason, err := (Union{quiet, quiet}).Authorize(context.Background(), Attributes{})
	if d != DecisionNoOpinion || reason != "no rule\nno rule" || err == nil {
		t.Errorf("no opinions: %v %q %v", d, reason, err)
	}
}

func TestReview(t *testing.T) {
	a := New(testLister())
	ctx := context.Background()
	viewer := authn.User{Name: "carol"}
	spec := func(verb, resource, ns string) authorizationv1.SelfSubjectAccessReviewSpec {
		return authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Resource: resource, Namespace: ns}}
	}
	if s := Review(ctx, a, spec("get", "pods", "ns2"), viewer); !s.Allowed || s.Denied || !strings.Contains(s.Reason, "carol-reads") {
		t.Errorf("carol get pods in ns2: %+v, want allowed", s)
	}
	if s := Review(ctx, a, spec("create", "pods", "ns2"), viewer); s.Allowed || s.Denied {
		t.Errorf("carol create pods: %+v, want not allowed (and not explicitly denied)", s)
	}
	s := ReviewSubject(ctx, a, authorizationv1.SubjectAccessReviewSpec{
		User: "bob", NonResourceAttributes: &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/version"}})
	if s.Allowed || s.Reason != `RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found` {
		t.Errorf("bob /version: %+v", s)
	}
	s = ReviewSubject(ctx, a, authorizationv1.SubjectAccessReviewSpec{
		Groups: l("devs"), ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods"}})
	if !s.Allowed {
		t.Errorf("group-only review for devs: %+v, want allowed", s)
	}
}

func TestValidateReviewSpecs(t *testing.T) {
	path := field.NewPath("spec")
	both := authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes:    &authorizationv1.ResourceAttributes{Verb: "get"},
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/"}}
	if errs := ValidateSelfSubjectAccessReviewSpec(both, path); len(errs) != 1 ||
		errs[0].Error() != `spec.nonResourceAttributes: Invalid value: {"path":"/","verb":"get"}: cannot be specified in combination with resourceAttributes` {
		t.Errorf("both: %v", errs)
	}
	if errs := ValidateSelfSubjectAccessReviewSpec(authorizationv1.SelfSubjectAccessReviewSpec{}, path); len(errs) != 1 ||
		!strings.Contains(errs[0].Error(), "exactly one of nonResourceAttributes or resourceAttributes must be specified") {
		t.Errorf("neither: %v", errs)
	}
	noUser := authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get"}}
	if errs := ValidateSubjectAccessReviewSpec(noUser, path); len(errs) != 1 ||
		!strings.Contains(errs[0].Error(), "at least one of user or group must be specified") {
		t.Errorf("no user: %v", errs)
	}
}
