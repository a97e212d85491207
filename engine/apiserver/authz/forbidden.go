package authz

import (
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// sanitizer escapes HTML in messages, as kube-apiserver's responsewriters do.
var sanitizer = strings.NewReplacer(`&`, "&amp;", `<`, "&lt;", `>`, "&gt;")

// Forbidden returns the 403 kube-apiserver answers a request the authorizer
// did not allow, word for word (responsewriters.ForbiddenStatusError), e.g.
//
//	pods is forbidden: User "bob" cannot create resource "pods" in API group "" in the namespace "default"
//
// with a non-empty reason appended after ": ".
func Forbidden(a Attributes, reason string) *apierrors.StatusError {
	msg := sanitizer.Replace(ForbiddenMessage(a))
	if reason != "" {
		msg = fmt.Sprintf("%s: %s", msg, reason)
	}
	gr := schema.GroupResource{Group: a.APIGroup, Resource: a.Resource}
	return apierrors.NewForbidden(gr, a.Name, errors.New(msg))
}

// ForbiddenMessage is the part of the 403 message that says who cannot do
// what: `User "u" cannot VERB resource "R[/SUB]" in API group "G" in the
// namespace "NS"` (or "at the cluster scope"), or `User "u" cannot VERB
// path "/p"` for non-resource requests.
func ForbiddenMessage(a Attributes) string {
	if !a.ResourceRequest {
		return fmt.Sprintf("User %q cannot %s path %q", a.User.Name, a.Verb, a.Path)
	}
	resource := a.Resource
	if a.Subresource != "" {
		resource = resource + "/" + a.Subresource
	}
	if a.Namespace != "" {
		return fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q", a.User.Name, a.Verb, resource, a.APIGroup, a.Namespace)
	}
	return fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope", a.User.Name, a.Verb, resource, a.APIGroup)
}
