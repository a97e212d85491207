package authz

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/podtrace/podtrace/engine/apiserver/authn"
)

// TestForbiddenBody compares the whole JSON body with the expectations of
// upstream's TestForbidden (k8s.io/apiserver responsewriters/errors_test.go)
// and with the messages kube-apiserver gives kubectl users.
func TestForbiddenBody(t *testing.T) {
	name := authn.User{Name: "NAME"}
	tests := []struct {
		name   string
		a      Attributes
		reason string
		want   string
	}{
		{"non-resource path", Attributes{User: name, Verb: "GET", Path: "/whatever"}, "",
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden: User \"NAME\" cannot GET path \"/whatever\"","reason":"Forbidden","details":{},"code":403}`},
		{"html is escaped", Attributes{User: name, Verb: "GET", Path: "/<script>"}, "",
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden: User \"NAME\" cannot GET path \"/\u0026lt;script\u0026gt;\"","reason":"Forbidden","details":{},"code":403}`},
		{"cluster scope", Attributes{User: name, Verb: "get", Resource: "pod", ResourceRequest: true}, "",
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pod is forbidden: User \"NAME\" cannot get resource \"pod\" in API group \"\" at the cluster scope","reason":"Forbidden","details":{"kind":"pod"},"code":403}`},
		{"named", Attributes{User: name, Verb: "get", Resource: "pod", ResourceRequest: true, Name: "mypod"}, "",
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pod \"mypod\" is forbidden: User \"NAME\" cannot get resource \"pod\" in API group \"\" at the cluster scope","reason":"Forbidden","details":{"name":"mypod","kind":"pod"},"code":403}`},
		{"subresource in a group and namespace", Attributes{User: name, Verb: "get", Namespace: "test", APIGroup: "v2", Resource: "pod", Subresource: "quota", ResourceRequest: true}, "",
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pod.v2 is forbidden: User \"NAME\" cannot get resource \"pod/quota\" in API group \"v2\" in the namespace \"test\"","reason":"Forbidden","details":{"group":"v2","kind":"pod"},"code":403}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status := Forbidden(tt.a, tt.reason).ErrStatus
			status.Kind, status.APIVersion = "Status", "v1"
			var buf bytes.Buffer
			if err := json.NewEncoder(&buf).Encode(status); err != nil {
				t.Fatal(err)
			}
			if got := buf.String(); got != tt.want+"\n" {
				t.Errorf("body\n got %s want %s", got, tt.want)
			}
		})
	}
}

func TestForbiddenMessages(t *testing.T) {
	bob := authn.User{Name: "bob"}
	viewer := authn.User{Name: "viewer", Groups: []string{"system:authenticated"}}
	tests := []struct {
		name   string
		a      Attributes
		reason string
		want   string
	}{
		{"create pods", Attributes{User: bob, Verb: "create", ResourceRequest: true, Resource: "pods", Namespace: "default"}, "",
			`pods is forbidden: User "bob" cannot create resource "pods" in API group "" in the namespace "default"`},
		{"create deployment as viewer", Attributes{User: viewer, Verb: "create", ResourceRequest: true, APIGroup: "apps", APIVersion: "v1", Resource: "deployments", Namespace: "default"}, "",
			`deployments.apps is forbidden: User "viewer" cannot create resource "deployments" in API group "apps" in the namespace "default"`},
		{"list nodes", Attributes{User: viewer, Verb: "list", ResourceRequest: true, Resource: "nodes"}, "",
			`nodes is forbidden: User "viewer" cannot list resource "nodes" in API group "" at the cluster scope`},
		{"delete named node", Attributes{User: bob, Verb: "delete", ResourceRequest: true, Resource: "nodes", Name: "node-1"}, "",
			`nodes "node-1" is forbidden: User "bob" cannot delete resource "nodes" in API group "" at the cluster scope`},
		{"pod binding", Attributes{User: bob, Verb: "create", ResourceRequest: true, Resource: "pods", Subresource: "binding", Namespace: "ns", Name: "web-1"}, "",
			`pods "web-1" is forbidden: User "bob" cannot create resource "pods/binding" in API group "" in the namespace "ns"`},
		{"anonymous root path", Attributes{User: *authn.AnonymousUser(), Verb: "get", Path: "/"}, "",
			`forbidden: User "system:anonymous" cannot get path "/"`},
		{"with RBAC reason", Attributes{User: bob, Verb: "get", ResourceRequest: true, Resource: "pods", Namespace: "default"},
			`RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found`,
			`pods is forbidden: User "bob" cannot get resource "pods" in API group "" in the namespace "default": RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Forbidden(tt.a, tt.reason)
			if err.Error() != tt.want {
				t.Errorf("message\n got %s\nwant %s", err.Error(), tt.want)
			}
			if err.ErrStatus.Code != 403 || err.ErrStatus.Reason != "Forbidden" {
				t.Errorf("status %d %s, want 403 Forbidden", err.ErrStatus.Code, err.ErrStatus.Reason)
			}
		})
	}
}
