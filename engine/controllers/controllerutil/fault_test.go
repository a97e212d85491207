package controllerutil

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/podtrace/podtrace/stages"
)

func TestFaultError(t *testing.T) {
	user := "system:serviceaccount:kube-system:replicaset-controller"
	tests := []struct {
		variant, resource string
		code              int32
		msg               string
	}{
		{"forbidden", "pods", 403, `pods is forbidden: User "` + user + `" cannot create resource "pods" in API group "" in the namespace "ns"`},
		{"forbidden", "replicasets", 403, `replicasets.apps is forbidden: User "` + user + `" cannot create resource "replicasets" in API group "apps" in the namespace "ns"`},
		{"quota", "pods", 403, `pods is forbidden: exceeded quota: podtrace-fault, requested: count/pods=1, used: count/pods=0, limited: count/pods=0`},
		{"timeout", "pods", 504, `Timeout: request did not complete within requested timeout - context deadline exceeded`},
		{"", "pods", 500, `Internal error occurred: etcdserver: request timed out`},
	}
	for _, tt := range tests {
		err := FaultError(&stages.Fault{Stage: stages.Reconcile, Kind: stages.Fail, Variant: tt.variant}, "create", tt.resource, "ns", user)
		var status apierrors.APIStatus
		if s, ok := err.(apierrors.APIStatus); ok {
			status = s
		} else {
			t.Fatalf("%s: not an API status error: %v", tt.variant, err)
		}
		if status.Status().Code != tt.code || err.Error() != tt.msg {
			t.Errorf("%s/%s: got %d %q\nwant %d %q", tt.variant, tt.resource, status.Status().Code, err.Error(), tt.code, tt.msg)
		}
	}
}
