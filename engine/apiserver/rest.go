package apiserver

import (
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// serveResource dispatches an authorized resource request.
func (s *Server) serveResource(w http.ResponseWriter, r *http.Request, rt *requestTrace) {
	info := rt.info
	res := s.resourceFor(info.apiGroup, info.apiVersion, info.resource)
	if res == nil {
		if info.apiGroup == "authorization.k8s.io" && info.resource == "selfsubjectaccessreviews" && info.verb == "create" {
			s.selfSubjectAccessReview(w, r, rt)
			return
		}
		if info.apiGroup == "authentication.k8s.io" && info.resource == "selfsubjectreviews" && info.verb == "create" &&
			info.apiVersion == "v1" && info.namespace == "" && info.name == "" {
			s.selfSubjectReview(w, r, rt)
			return
		}
		writeError(w, nil, notFound(info))
		return
	}
	watching := info.verb == "watch"
	acc, err := negotiate(r, watching)
	if err != nil {
		writeError(w, nil, err)
		return
	}
	ns := info.namespace
	if res.Namespaced && ns == "" && info.name != "" {
		writeError(w, acc.format, notFound(info))
		return
	}
	if !res.Namespaced && ns != "" {
		writeError(w, acc.format, notFound(info))
		return
	}
	if info.subresource == "exec" && res.GVR.Group == "" && res.GVR.Resource == "pods" && info.name != "" {
		s.podExec(w, r, res, rt) // a connect subresource, not in res.Subresources (discovery)
		return
	}
	if info.subresource == "portforward" && res.GVR.Group == "" && res.GVR.Resource == "pods" && info.name != "" {
		s.podPortForward(w, r, res, rt) // a connect subresource, like exec
		return
	}
	if info.subresource == "attach" && res.GVR.Group == "" && res.GVR.Resource == "pods" && info.name != "" {
		s.podAttach(w, r, res, rt) // a connect subresource, like exec
		return
	}
	if info.subresource != "" && !res.HasSubresource(info.subresource) {
		writeError(w, acc.format, notFound(info))
		return
	}
	switch sub := info.subresource; {
	case sub == "binding" && info.verb == "create":
		s.bind(w, r, res, ns, info.name, acc)
	case sub == "scale":
		s.scale(w, r, res, ns, info.name, acc, rt)
	case sub == "log" && info.verb == "get":
		s.podLog(w, r, ns, info.name, acc)
	case sub == "status" || sub == "finalize" || sub == "":
		switch info.verb {
		case "get":
			s.get(w, r, res, ns, info.name, acc)
		case "list":
			s.list(w, r, res, ns, acc)
		case "watch":
			s.watch(w, r, res, ns, info.name, acc)
		case "create":
			if sub != "" || info.name != "" {
				writeError(w, acc.format, methodNotSupported(res, sub, r.Method))
				return
			}
			s.create(w, r, res, ns, acc, rt)
		case "update":
			s.update(w, r, res, ns, info.name, sub, acc, rt)
		case "patch":
			s.patch(w, r, res, ns, info.name, sub, acc, rt)
		case "delete":
			if sub != "" {
				writeError(w, acc.format, methodNotSupported(res, sub, r.Method))
				return
			}
			s.remove(w, r, res, ns, info.name, acc, rt)
		default:
			writeError(w, acc.format, methodNotSupported(res, sub, r.Method))
		}
	default:
		writeError(w, acc.format, methodNotSupported(res, info.subresource, r.Method))
	}
}

func notFound(info requestInfo) error {
	return statusError(http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource")
}

func methodNotSupported(res *Resource, sub, method string) error {
	name := res.GVR.Resource
	if sub != "" {
		name += "/" + sub
	}
	return apierrors.NewMethodNotSupported(schema.GroupResource{Group: res.GVR.Group, Resource: name}, strings.ToLower(method))
}
