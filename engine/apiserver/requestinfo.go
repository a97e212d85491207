package apiserver

import (
	"net/http"
	"strings"

	"github.com/podtrace/podtrace/engine/apiserver/authn"
	"github.com/podtrace/podtrace/engine/apiserver/authz"
)

// requestInfo is what a request's method and path say it wants, parsed the
// way kube-apiserver's RequestInfoFactory does.
type requestInfo struct {
	resourceRequest bool
	path            string
	verb            string // get, list, watch, create, update, patch, delete, deletecollection
	apiGroup        string
	apiVersion      string
	namespace       string
	resource        string
	subresource     string
	name            string
}

// parseRequestInfo parses /api/v1/... and /apis/GROUP/VERSION/... paths.
func parseRequestInfo(r *http.Request) requestInfo {
	info := requestInfo{path: r.URL.Path, verb: strings.ToLower(r.Method)}
	parts := splitPath(r.URL.Path)
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		info.apiVersion, parts = parts[1], parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		info.apiGroup, info.apiVersion, parts = parts[1], parts[2], parts[3:]
	default:
		return info // discovery or a non-resource path
	}
	info.resourceRequest = true
	switch r.Method {
	case http.MethodPost:
		info.verb = "create"
	case http.MethodGet, http.MethodHead:
		info.verb = "get"
	case http.MethodPut:
		info.verb = "update"
	case http.MethodPatch:
		info.verb = "patch"
	case http.MethodDelete:
		info.verb = "delete"
	}
	if parts[0] == "watch" { // the deprecated /watch/ path prefix
		info.verb, parts = "watch", parts[1:]
	}
	if len(parts) >= 2 && parts[0] == "namespaces" && parts[1] != "" {
		if len(parts) > 2 && !isNamespaceSub(parts) {
			info.namespace, parts = parts[1], parts[2:]
		}
	}
	if len(parts) > 0 {
		info.resource = parts[0]
	}
	if len(parts) > 1 {
		info.name = parts[1]
	}
	if len(parts) > 2 {
		info.subresource = parts[2]
	}
	if info.name == "" {
		switch info.verb {
		case "get":
			info.verb = "list"
		case "delete":
			info.verb = "deletecollection"
		}
	}
	if (info.verb == "list" || info.verb == "get") && isWatch(r) {
		info.verb = "watch"
	}
	return info
}

// isNamespaceSub reports whether parts is /namespaces/NAME/status or /finalize,
// a subresource of the namespace itself rather than a namespaced resource.
func isNamespaceSub(parts []string) bool {
	return len(parts) == 3 && (parts[2] == "status" || parts[2] == "finalize")
}

func isWatch(r *http.Request) bool {
	v := r.URL.Query().Get("watch")
	return v == "true" || v == "1"
}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return []string{}
	}
	return strings.Split(p, "/")
}

// attributes is what the authorizer is asked about the request, for user
// and verb (a connect request is also checked for create, as upstream does).
func (info requestInfo) attributes(user authn.User, verb string) authz.Attributes {
	return authz.Attributes{User: user, Verb: verb, ResourceRequest: info.resourceRequest,
		APIGroup: info.apiGroup, APIVersion: info.apiVersion, Resource: info.resource,
		Subresource: info.subresource, Namespace: info.namespace, Name: info.name, Path: info.path}
}
