package apiserver

import (
	"net/http/httptest"
	"testing"
)

func TestParseRequestInfo(t *testing.T) {
	tests := []struct {
		method, url string
		want        requestInfo
	}{
		{"GET", "/api/v1/namespaces/default/pods", requestInfo{verb: "list", apiVersion: "v1", namespace: "default", resource: "pods"}},
		{"GET", "/api/v1/pods?watch=true", requestInfo{verb: "watch", apiVersion: "v1", resource: "pods"}},
		{"GET", "/api/v1/namespaces/default/pods/web", requestInfo{verb: "get", apiVersion: "v1", namespace: "default", resource: "pods", name: "web"}},
		{"POST", "/api/v1/namespaces/default/pods/web/binding", requestInfo{verb: "create", apiVersion: "v1", namespace: "default", resource: "pods", name: "web", subresource: "binding"}},
		{"PUT", "/api/v1/namespaces/kube-system", requestInfo{verb: "update", apiVersion: "v1", resource: "namespaces", name: "kube-system"}},
		{"PUT", "/api/v1/namespaces/kube-system/status", requestInfo{verb: "update", apiVersion: "v1", resource: "namespaces", name: "kube-system", subresource: "status"}},
		{"GET", "/apis/apps/v1/namespaces/ns1/deployments/web/scale", requestInfo{verb: "get", apiGroup: "apps", apiVersion: "v1", namespace: "ns1", resource: "deployments", name: "web", subresource: "scale"}},
		{"DELETE", "/apis/apps/v1/namespaces/ns1/replicasets", requestInfo{verb: "deletecollection", apiGroup: "apps", apiVersion: "v1", namespace: "ns1", resource: "replicasets"}},
		{"GET", "/api/v1/watch/namespaces/default/pods", requestInfo{verb: "watch", apiVersion: "v1", namespace: "default", resource: "pods"}},
		{"GET", "/api/v1/nodes/node-1", requestInfo{verb: "get", apiVersion: "v1", resource: "nodes", name: "node-1"}},
	}
	for _, tt := range tests {
		got := parseRequestInfo(httptest.NewRequest(tt.method, tt.url, nil))
		tt.want.resourceRequest = true
		got.path = ""
		if got != tt.want {
			t.Errorf("%s %s = %+v, want %+v", tt.method, tt.url, got, tt.want)
		}
	}
	if parseRequestInfo(httptest.NewRequest("GET", "/version", nil)).resourceRequest {
		t.Error("/version is not a resource request")
	}
}
