package apiserver

import (
	"encoding/json"
	"io"
	"log"
	"net/http"
	"runtime"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"

	podtraceversion "github.com/podtrace/podtrace/version"
)

// Version is the Kubernetes release podtrace speaks for.
var Version = version.Info{Major: major, Minor: minor, GitVersion: podtraceversion.Kubernetes, GitCommit: "podtrace",
	GitTreeState: "clean", BuildDate: "2026-01-01T00:00:00Z", GoVersion: runtime.Version(),
	Compiler: runtime.Compiler, Platform: runtime.GOOS + "/" + runtime.GOARCH}

var major, minor = podtraceversion.KubernetesMajorMinor()

var allVerbs = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// serveNonResource answers discovery, /version and health checks.
func (s *Server) serveNonResource(w http.ResponseWriter, r *http.Request) {
	json := formats[mediaJSON]
	switch p := r.URL.Path; {
	case p == "/version" || p == "/version/":
		writeJSON(w, Version)
	case p == "/healthz" || p == "/livez" || p == "/readyz":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok")
	case (p == "/api" || p == "/api/") && wantsAggregated(r):
		writeAggregated(w, s.aggregatedDiscovery(true))
	case (p == "/apis" || p == "/apis/") && wantsAggregated(r):
		writeAggregated(w, s.aggregatedDiscovery(false))
	case p == "/api" || p == "/api/":
		writeObject(w, json, http.StatusOK, &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
			Versions: []string{"v1"}, ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
				{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host}}})
	case p == "/apis" || p == "/apis/":
		writeObject(w, json, http.StatusOK, s.groupList())
	default:
		if serveOpenAPI(w, r) {
			return
		}
		if list := s.resourceList(p); list != nil {
			writeObject(w, json, http.StatusOK, list)
			return
		}
		if g := s.group(p); g != nil {
			writeObject(w, json, http.StatusOK, g)
			return
		}
		writeError(w, nil, notFound(requestInfo{}))
	}
}

func writeJSON(w http.ResponseWriter, v interface{}) {
	w.Header().Set("Content-Type", mediaJSON)
	data, _ := json.Marshal(v)
	w.Write(data)
}

// groups returns the API groups served beyond the core group, sorted as
// kube-apiserver orders them (apps first, then alphabetically).
func (s *Server) groups() []metav1.APIGroup {
	versions := map[string]string{}
	for _, r := range s.ordered {
		if r.GVR.Group != "" {
			versions[r.GVR.Group] = r.GVR.Version
		}
	}
	versions["authorization.k8s.io"] = "v1"
	versions["authentication.k8s.io"] = "v1"
	names := make([]string, 0, len(versions))
	for g := range versions {
		names = append(names, g)
	}
	sort.Slice(names, func(i, j int) bool {
		if (names[i] == "apps") != (names[j] == "apps") {
			return names[i] == "apps"
		}
		return names[i] < names[j]
	})
	out := make([]metav1.APIGroup, 0, len(names))
	for _, g := range names {
		gv := metav1.GroupVersionForDiscovery{GroupVersion: g + "/" + versions[g], Version: versions[g]}
		out = append(out, metav1.APIGroup{Name: g, Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv})
	}
	return out
}

func (s *Server) groupList() *metav1.APIGroupList {
	return &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: s.groups()}
}

func (s *Server) group(path string) *metav1.APIGroup {
	for _, g := range s.groups() {
		if path == "/apis/"+g.Name || path == "/apis/"+g.Name+"/" {
			g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
			return &g
		}
	}
	return nil
}

// resourceList answers /api/v1 and /apis/GROUP/VERSION.
func (s *Server) resourceList(path string) *metav1.APIResourceList {
	gv := ""
	switch {
	case path == "/api/v1" || path == "/api/v1/":
		gv = "v1"
	case len(path) > 6 && path[:6] == "/apis/":
		gv = trimSlash(path[6:])
	default:
		return nil
	}
	list := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv}
	if gv == "authentication.k8s.io/v1" {
		list.APIResources = []metav1.APIResource{{Name: "selfsubjectreviews", SingularName: "selfsubjectreview",
			Kind: "SelfSubjectReview", Verbs: metav1.Verbs{"create"}}}
		return list
	}
	if gv == "authorization.k8s.io/v1" {
		list.APIResources = []metav1.APIResource{{Name: "selfsubjectaccessreviews", SingularName: "selfsubjectaccessreview",
			Kind: "SelfSubjectAccessReview", Verbs: metav1.Verbs{"create"}}}
		return list
	}
	for _, r := range s.ordered {
		if r.GVR.GroupVersion().String() != gv {
			continue
		}
		list.APIResources = append(list.APIResources, metav1.APIResource{Name: r.GVR.Resource, SingularName: r.Singular,
			Namespaced: r.Namespaced, Kind: r.Kind, Verbs: allVerbs, ShortNames: r.ShortNames, Categories: r.Categories})
		for _, sub := range r.Subresources {
			verbs, kind, group, version := metav1.Verbs{"get", "patch", "update"}, r.Kind, "", ""
			switch sub {
			case "binding":
				verbs, kind = metav1.Verbs{"create"}, "Binding"
			case "log":
				verbs, kind = metav1.Verbs{"get"}, "Pod"
			case "scale":
				kind, group, version = "Scale", "autoscaling", "v1"
			case "finalize":
				verbs = metav1.Verbs{"update"}
			}
			list.APIResources = append(list.APIResources, metav1.APIResource{Name: r.GVR.Resource + "/" + sub,
				Namespaced: r.Namespaced, Kind: kind, Group: group, Version: version, Verbs: verbs})
		}
	}
	if len(list.APIResources) == 0 {
		return nil
	}
	return list
}

func trimSlash(s string) string {
	for len(s) > 0 && s[len(s)-1] == '/' {
		s = s[:len(s)-1]
	}
	return s
}

// discardLogger keeps net/http's own error logs (TLS handshake noise) off
// the terminal the UI draws on.
func discardLogger() *log.Logger { return log.New(io.Discard, "", 0) }
