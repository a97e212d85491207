package api

import (
	"context"
	"net/http"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/kubernetes/pkg/api/legacyscheme"

	"github.com/podtrace/podtrace/stages"
)

// authenticatorHook times the authn stage and fails it by fault: the
// request is then unauthenticated, and kube-apiserver answers its own 401.
type authenticatorHook struct {
	inner authenticator.Request
	h     *Hooks
}

// AuthenticateRequest implements authenticator.Request.
func (a *authenticatorHook) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	rec := recordFrom(req.Context())
	if rec == nil {
		return a.inner.AuthenticateRequest(req)
	}
	rec.begin(stages.Authn)
	if f, err := a.h.tr.Gate(req.Context(), rec.ref, stages.Authn, Component); err != nil || f != nil {
		rec.end(stages.Authn, true)
		return nil, false, nil // as an expired token: 401 Unauthorized
	}
	resp, ok, err := a.inner.AuthenticateRequest(req)
	if ok && resp != nil {
		rec.mu.Lock()
		rec.user, rec.groups = resp.User.GetName(), resp.User.GetGroups()
		if rec.verb == "create" {
			rec.controller = controllerOf(rec.user)
		}
		rec.mu.Unlock()
	}
	rec.end(stages.Authn, !ok || err != nil)
	return resp, ok, err
}

// authorizerHook times the authz stage. An authz fault, or a reconcile
// fault of the forbidden kind on a controller's create, makes RBAC say no:
// kube-apiserver then writes its own 403.
type authorizerHook struct {
	inner authorizer.Authorizer
	h     *Hooks
}

// Authorize implements authorizer.Authorizer.
func (a *authorizerHook) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	rec := recordFrom(ctx)
	if rec == nil || rec.has(stages.Authz) {
		return a.inner.Authorize(ctx, attrs)
	}
	rec.begin(stages.Authz)
	if deny, err := a.gate(ctx, rec); err != nil || deny {
		rec.end(stages.Authz, true)
		return authorizer.DecisionDeny, "", nil
	}
	d, reason, err := a.inner.Authorize(ctx, attrs)
	rec.end(stages.Authz, d != authorizer.DecisionAllow)
	return d, reason, err
}

func (a *authorizerHook) gate(ctx context.Context, rec *record) (bool, error) {
	if !a.h.tr.Armed() {
		return false, nil
	}
	f, err := a.h.tr.Gate(ctx, rec.ref, stages.Authz, Component)
	if err != nil {
		return true, err
	}
	if f != nil {
		// rbac-lost takes the components' bindings; system:masters is
		// allowed before RBAC is asked.
		return !(f.Variant == stages.VariantRBACLost && slices.Contains(rec.groups, "system:masters")), nil
	}
	if rec.controller == "" {
		return false, nil
	}
	f, err = a.h.tr.Gate(ctx, rec.ref, stages.Reconcile, rec.controller)
	if err != nil {
		return true, err
	}
	if f == nil {
		return false, nil
	}
	if f.Variant == stages.VariantForbidden {
		return true, nil
	}
	rec.mu.Lock()
	rec.fault = f // applied where that failure happens: admission, storage
	rec.mu.Unlock()
	return false, nil
}

// nameFromBody finds the name (or generateName) in a create's body, JSON,
// YAML or protobuf, so a refused create still has a lane.
func nameFromBody(body []byte) string {
	m := metaFromBody(body)
	switch {
	case m == nil:
		return ""
	case m.GetName() != "":
		return m.GetName()
	}
	return m.GetGenerateName()
}

// metaFromBody decodes a request's body (JSON, YAML or protobuf) and
// returns its object's metadata, or nil.
func metaFromBody(body []byte) metav1.Object {
	if len(body) == 0 {
		return nil
	}
	obj, _, err := legacyscheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
	if err != nil {
		return nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	return m
}
