// Package authz answers the API server's second question about a request:
// may this user do this. It follows kube-apiserver's authorizers: a union of
// authorizers where the first Allow or Deny wins, the system:masters
// short-circuit, and RBAC over Roles, ClusterRoles and their bindings with
// upstream's rule matching. Forbidden builds kube-apiserver's 403 body and
// Review evaluates (Self)SubjectAccessReviews for `kubectl auth can-i`.
package authz

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/podtrace/podtrace/engine/apiserver/authn"
)

// Attributes describe one request for authorization, like
// k8s.io/apiserver's authorizer.AttributesRecord.
type Attributes struct {
	// User is who is asking.
	User authn.User
	// Verb is the API verb (get, list, watch, create, update, patch, delete,
	// deletecollection, ...) for resource requests, or the lowercased HTTP
	// method for non-resource requests.
	Verb string
	// ResourceRequest is true for requests on API resources and false for
	// non-resource paths such as /version, /api or /healthz.
	ResourceRequest bool
	// APIGroup is the resource's group ("" for the core group).
	APIGroup string
	// APIVersion is the resource's version.
	APIVersion string
	// Resource is the plural resource name, such as "pods".
	Resource string
	// Subresource is the subresource, such as "status" or "binding".
	Subresource string
	// Namespace is the request's namespace, empty for cluster scope.
	Namespace string
	// Name is the object's name, empty for collections and creates.
	Name string
	// Path is the URL path (used for non-resource requests).
	Path string
}

// Decision is an authorizer's verdict, numbered as in k8s.io/apiserver.
type Decision int

// The possible decisions.
const (
	// DecisionDeny means the request is refused and no other authorizer is asked.
	DecisionDeny Decision = iota
	// DecisionAllow means the request is allowed.
	DecisionAllow
	// DecisionNoOpinion means this authorizer neither allows nor denies.
	DecisionNoOpinion
)

// String returns "deny", "allow" or "no-opinion".
func (d Decision) String() string {
	switch d {
	case DecisionDeny:
		return "deny"
	case DecisionAllow:
		return "allow"
	case DecisionNoOpinion:
		return "no-opinion"
	}
	return "unknown"
}

// Authorizer decides on a request. The reason explains the decision (for
// a refused request it is appended to the 403 message when not empty); a
// non-nil error reports evaluation problems and may accompany any decision.
type Authorizer interface {
	Authorize(ctx context.Context, a Attributes) (Decision, string, error)
}

// AuthorizerFunc adapts a function to Authorizer.
type AuthorizerFunc func(ctx context.Context, a Attributes) (Decision, string, error)

// Authorize calls f.
func (f AuthorizerFunc) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	return f(ctx, a)
}

// Union asks each authorizer in order; the first Allow or Deny is returned
// with its reason and error. If all have no opinion, the reasons are joined
// with newlines and the errors joined, as in k8s.io/apiserver's union.
type Union []Authorizer

// Authorize implements Authorizer.
func (u Union) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	var (
		errs    []error
		reasons []string
	)
	for _, authorizer := range u {
		decision, reason, err := authorizer.Authorize(ctx, a)
		if err != nil {
			errs = append(errs, err)
		}
		if reason != "" {
			reasons = append(reasons, reason)
		}
		if decision == DecisionAllow || decision == DecisionDeny {
			return decision, reason, err
		}
	}
	return DecisionNoOpinion, strings.Join(reasons, "\n"), errors.Join(errs...)
}

// PrivilegedGroups allows every request of a user in one of groups and has
// no opinion otherwise (kube-apiserver's system:masters authorizer).
func PrivilegedGroups(groups ...string) Authorizer {
	return AuthorizerFunc(func(_ context.Context, a Attributes) (Decision, string, error) {
		for _, g := range a.User.Groups {
			if slices.Contains(groups, g) {
				return DecisionAllow, "", nil
			}
		}
		return DecisionNoOpinion, "", nil
	})
}

// New returns podtrace's authorizer chain: system:masters, then RBAC over
// the objects l returns.
func New(l RBACLister) Authorizer {
	return Union{PrivilegedGroups(authn.SystemPrivilegedGroup), NewRBAC(l)}
}
