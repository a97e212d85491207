package apiserver

import (
	"encoding/json"
	"mime"
	"net/http"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// mediaDiscoveryV2 is the Content-Type of aggregated discovery, which
// clients from 1.30 on ask /api and /apis for before the per-group lists.
const mediaDiscoveryV2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// wantsAggregated reports whether the Accept header asks for
// apidiscovery.k8s.io/v2 (kube-apiserver 1.36 no longer serves v2beta1, so
// older clients fall back to the per-group lists as they would there).
func wantsAggregated(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err == nil && mt == mediaJSON && params["g"] == "apidiscovery.k8s.io" && params["v"] == "v2" &&
			params["as"] == "APIGroupDiscoveryList" {
			return true
		}
	}
	return false
}

// aggregatedDiscovery is /api (core only) or /apis (every other group) in
// one document: groups, versions and resources with their subresources.
func (s *Server) aggregatedDiscovery(core bool) *apidiscoveryv2.APIGroupDiscoveryList {
	out := &apidiscoveryv2.APIGroupDiscoveryList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/v2"}}
	var groups []metav1.APIGroup
	if core {
		groups = []metav1.APIGroup{{Versions: []metav1.GroupVersionForDiscovery{{GroupVersion: "v1", Version: "v1"}}}}
	} else {
		groups = s.groups()
	}
	for _, g := range groups {
		group := apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: g.Name}}
		for _, v := range g.Versions {
			path := "/apis/" + v.GroupVersion
			if core {
				path = "/api/v1"
			}
			version := apidiscoveryv2.APIVersionDiscovery{Version: v.Version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
			if list := s.resourceList(path); list != nil {
				version.Resources = aggregatedResources(g.Name, v.Version, list.APIResources)
			}
			group.Versions = append(group.Versions, version)
		}
		out.Items = append(out.Items, group)
	}
	return out
}

// aggregatedResources folds a legacy resource list ("pods", "pods/status",
// ...) into resources with their subresources.
func aggregatedResources(group, version string, list []metav1.APIResource) []apidiscoveryv2.APIResourceDiscovery {
	var out []apidiscoveryv2.APIResourceDiscovery
	index := map[string]int{}
	kindOf := func(r metav1.APIResource) *metav1.GroupVersionKind {
		gvk := &metav1.GroupVersionKind{Group: group, Version: version, Kind: r.Kind}
		if r.Group != "" || r.Version != "" {
			gvk.Group, gvk.Version = r.Group, r.Version
		}
		return gvk
	}
	for _, r := range list {
		parent, sub, isSub := strings.Cut(r.Name, "/")
		if !isSub {
			scope := apidiscoveryv2.ScopeCluster
			if r.Namespaced {
				scope = apidiscoveryv2.ScopeNamespace
			}
			index[r.Name] = len(out)
			out = append(out, apidiscoveryv2.APIResourceDiscovery{Resource: r.Name, ResponseKind: kindOf(r), Scope: scope,
				SingularResource: r.SingularName, Verbs: r.Verbs, ShortNames: r.ShortNames, Categories: r.Categories})
			continue
		}
		i, ok := index[parent]
		if !ok {
			continue
		}
		d := apidiscoveryv2.APISubresourceDiscovery{Subresource: sub, ResponseKind: kindOf(r), Verbs: r.Verbs}
		if sub == "scale" {
			d.AcceptedTypes = []metav1.GroupVersionKind{*d.ResponseKind}
		}
		out[i].Subresources = append(out[i].Subresources, d)
	}
	return out
}

// writeAggregated writes aggregated discovery with its own Content-Type,
// which clients check before decoding.
func writeAggregated(w http.ResponseWriter, list *apidiscoveryv2.APIGroupDiscoveryList) {
	data, err := json.Marshal(list)
	if err != nil {
		writeError(w, nil, err)
		return
	}
	w.Header().Set("Content-Type", mediaDiscoveryV2)
	w.Header().Set("Vary", "Accept")
	w.Write(data)
}
