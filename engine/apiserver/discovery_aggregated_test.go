package apiserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
)

// TestAggregatedDiscoveryMatchesLegacy folds aggregated discovery back the
// way client-go does and expects exactly the per-group lists.
func TestAggregatedDiscoveryMatchesLegacy(t *testing.T) {
	s := &Server{ordered: Resources()}
	for _, core := range []bool{true, false} {
		groups, byGV, failed := discovery.SplitGroupsAndResources(*s.aggregatedDiscovery(core))
		if len(failed) > 0 {
			t.Fatalf("failed group versions %v", failed)
		}
		if !core && !reflect.DeepEqual(groups.Groups, s.groups()) {
			t.Errorf("groups = %+v, want %+v", groups.Groups, s.groups())
		}
		for gv, got := range byGV {
			path := "/apis/" + gv.String()
			if core {
				path = "/api/v1"
			}
			want := s.resourceList(path)
			for i := range want.APIResources {
				if want.APIResources[i].Group == "" && want.APIResources[i].Version == "" {
					want.APIResources[i].Group, want.APIResources[i].Version = gv.Group, gv.Version
				}
				if want.APIResources[i].SingularName == "" { // subresources inherit their parent's
					want.APIResources[i].SingularName = got.APIResources[i].SingularName
				}
			}
			if !reflect.DeepEqual(got.APIResources, want.APIResources) {
				t.Errorf("%s:\n got %+v\nwant %+v", gv, got.APIResources, want.APIResources)
			}
		}
		if core && len(byGV) != 1 || !core && len(byGV) != len(s.groups()) {
			t.Errorf("core=%v: %d group versions", core, len(byGV))
		}
	}
}

func TestAggregatedDiscoveryNegotiation(t *testing.T) {
	s := &Server{ordered: Resources()}
	tests := []struct {
		accept, ctype string
	}{
		{"application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json", mediaDiscoveryV2},
		{"application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json", mediaJSON},
		{"application/json, */*", mediaJSON},
	}
	for _, tc := range tests {
		r := httptest.NewRequest(http.MethodGet, "/apis", nil)
		r.Header.Set("Accept", tc.accept)
		w := httptest.NewRecorder()
		s.serveNonResource(w, r)
		if got := w.Header().Get("Content-Type"); got != tc.ctype {
			t.Errorf("Accept %q: Content-Type %q, want %q", tc.accept, got, tc.ctype)
			continue
		}
		if tc.ctype == mediaDiscoveryV2 {
			var list apidiscoveryv2.APIGroupDiscoveryList
			if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil || list.Kind != "APIGroupDiscoveryList" || list.Items[0].Name != "apps" {
				t.Errorf("aggregated body: %v %+v", err, list.TypeMeta)
			}
			var scale *apidiscoveryv2.APISubresourceDiscovery
			for _, r := range list.Items[0].Versions[0].Resources {
				for i, sub := range r.Subresources {
					if r.Resource == "deployments" && sub.Subresource == "scale" {
						scale = &r.Subresources[i]
					}
				}
			}
			if scale == nil || *scale.ResponseKind != (metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}) {
				t.Errorf("deployments/scale = %+v", scale)
			}
		}
	}
}
