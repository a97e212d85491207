package apiserver_test

import (
	"context"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podtrace/podtrace/engine/enginetest"
)

// TestPortForwardChecks runs kube-apiserver's PortForwardREST checks before
// any upgrade: the caller needs create on pods/portforward (also for a GET),
// the pod must exist and have a node.
func TestPortForwardChecks(t *testing.T) {
	env := enginetest.Start(t)
	ctx := context.Background()
	admin := env.Admin()
	for _, p := range []*corev1.Pod{pod("unscheduled"), pod("placed")} {
		if p.Name == "placed" {
			p.Spec.NodeName = "node-1"
		}
		if _, err := admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	grantGetPortForward(t, admin, "getter")
	getter := env.ClientFor(t, "getter")
	for _, tc := range []struct {
		name, method, pod, want string
		ports                   string
		client                  kubernetes.Interface
		code                    int
	}{
		{"unknown pod", "POST", "missing", `pods "missing" not found`, "", admin, http.StatusNotFound},
		{"no node", "POST", "unscheduled", "pod unscheduled does not have a host assigned", "", admin, http.StatusBadRequest},
		{name: "bad port", method: "POST", pod: "placed", ports: "http", client: admin, code: http.StatusBadRequest,
			want: `cannot convert to []int32: strconv.ParseUint: parsing "http": invalid syntax`},
		{"no upgrade", "POST", "placed", "Upgrade request required", "80", admin, http.StatusBadRequest},
		// ensureAuthorizedForVerb's Forbidden carries the authorizer's
		// reason, which RBAC leaves empty.
		{"get without create", "GET", "placed", `pods "placed" is forbidden: `, "", getter, http.StatusForbidden},
		{"no get", "GET", "placed",
			`pods "placed" is forbidden: User "nobody" cannot get resource "pods/portforward" in API group "" in the namespace "default"`,
			"", env.ClientFor(t, "nobody"), http.StatusForbidden},
		{"no create", "POST", "placed",
			`pods "placed" is forbidden: User "getter" cannot create resource "pods/portforward" in API group "" in the namespace "default"`,
			"", getter, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.client.CoreV1().RESTClient().Verb(tc.method).Resource("pods").Namespace("default").Name(tc.pod).
				SubResource("portforward")
			if tc.ports != "" {
				req = req.Param("ports", tc.ports)
			}
			res := req.Do(ctx)
			var code int
			res.StatusCode(&code)
			err := res.Error()
			if code != tc.code || err == nil || err.Error() != tc.want {
				t.Fatalf("status %d, %v; want %d, %q", code, err, tc.code, tc.want)
			}
			if _, ok := err.(apierrors.APIStatus); !ok {
				t.Fatalf("not a Status: %T %v", err, err)
			}
		})
	}
}

// grantGetPortForward lets user get, but not create, pods/portforward.
func grantGetPortForward(t *testing.T, admin kubernetes.Interface, user string) {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pf-get", Namespace: "default"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods/portforward"}, Verbs: []string{"get"}}}}
	if _, err := admin.RbacV1().Roles("default").Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "pf-get", Namespace: "default"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "pf-get"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}}}
	if _, err := admin.RbacV1().RoleBindings("default").Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
