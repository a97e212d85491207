package controllerutil

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podtrace/podtrace/stages"
)

// FaultError turns a reconcile fault into the error the API server would
// have returned to the controller's request (verb create, update, ...) on
// resource (pods, replicasets) in namespace by user. Variants: "forbidden" (RBAC 403), "quota" (exceeded
// quota 403), "timeout" (504); anything else is a 500 internal error.
func FaultError(f *stages.Fault, verb, resource, namespace, user string) error {
	gr := schema.GroupResource{Resource: resource}
	if resource == "replicasets" {
		gr.Group = "apps"
	}
	switch f.Variant {
	case "forbidden":
		group := gr.Group
		return apierrors.NewForbidden(gr, "", fmt.Errorf("User %q cannot %s resource %q in API group %q in the namespace %q",
			user, verb, resource, group, namespace))
	case "quota":
		return apierrors.NewForbidden(gr, "", fmt.Errorf("exceeded quota: podtrace-fault, requested: %s=1, used: %s=0, limited: %s=0",
			"count/"+gr.String(), "count/"+gr.String(), "count/"+gr.String()))
	case "timeout":
		return apierrors.NewTimeoutError("request did not complete within requested timeout - context deadline exceeded", 0)
	}
	return apierrors.NewInternalError(errors.New("etcdserver: request timed out"))
}
