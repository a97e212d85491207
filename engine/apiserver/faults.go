package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/engine/apiserver/authn"
	"github.com/podtrace/podtrace/engine/apiserver/authz"
	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

// gated reports whether the request's API stages take faults and
// breakpoints: writes of traced resources (pods, replicasets, deployments).
func (s *Server) gated(info requestInfo) *Resource {
	if s.cfg.Tracer == nil || !writeVerbs[info.verb] || info.subresource != "" {
		return nil
	}
	if res := s.resourceFor(info.apiGroup, info.apiVersion, info.resource); res != nil && res.Traced {
		return res
	}
	return nil
}

// gate runs the tracer's gate for one API stage of rt's request and turns a
// fault into the error kube-apiserver would return at that stage.
func (s *Server) gate(ctx context.Context, r *http.Request, rt *requestTrace, stage stages.ID, attrs *authz.Attributes) error {
	res := s.gated(rt.info)
	if res == nil || !s.cfg.Tracer.Armed() {
		return nil
	}
	if rt.ref.Name == "" {
		rt.ref = trace.Ref{Kind: res.Kind, Namespace: rt.info.namespace, Name: rt.info.name}
		if rt.ref.Name == "" && r != nil {
			rt.ref.Name = nameFromBody(r, res)
		}
	}
	fault, err := s.cfg.Tracer.Gate(ctx, rt.ref, stage, "kube-apiserver")
	if err != nil {
		return apierrors.NewTimeoutError("request cancelled while held", 0)
	}
	if fault == nil {
		return nil
	}
	return faultError(*fault, res, rt, attrs)
}

// faultError is the realistic error of an API stage fault; nil when the
// fault spares this request (rbac-lost does not touch system:masters).
func faultError(f stages.Fault, res *Resource, rt *requestTrace, attrs *authz.Attributes) error {
	name := rt.ref.Name
	switch f.Stage {
	case stages.Authn: // expired or revoked credentials
		return authn.Unauthorized()
	case stages.Authz: // the caller's RBAC binding is gone
		if f.Variant == "rbac-lost" && attrs != nil && slices.Contains(attrs.User.Groups, "system:masters") {
			return nil // system:masters is authorized before RBAC is asked
		}
		if attrs != nil {
			return authz.Forbidden(*attrs, "")
		}
		return apierrors.NewForbidden(res.GroupResource(), name, errors.New("RBAC: access denied"))
	case stages.Admission:
		switch f.Variant {
		case "quota":
			return apierrors.NewForbidden(res.GroupResource(), name,
				errors.New("exceeded quota: compute-quota, requested: requests.cpu=100m, used: requests.cpu=4, limited: requests.cpu=4"))
		default: // a validating webhook that says no
			return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusBadRequest,
				Reason: metav1.StatusReasonBadRequest, Message: fmt.Sprintf(
					"admission webhook %q denied the request: %s %q is not allowed by policy", "deny.podtrace.dev", res.Kind, name)}}
		}
	case stages.Persist:
		if f.Variant == "conflict" {
			return conflict(res, name)
		}
		return apierrors.NewTimeoutError("etcdserver: request timed out", 2)
	}
	return apierrors.NewInternalError(fmt.Errorf("fault %s", f))
}
