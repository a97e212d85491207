package bootstrap

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

func loadUpstreamRoles(t *testing.T, files ...string) map[string]*rbacv1.ClusterRole {
	t.Helper()
	out := map[string]*rbacv1.ClusterRole{}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join("testdata", "upstream", f))
		if err != nil {
			t.Fatal(err)
		}
		var list rbacv1.ClusterRoleList
		if err := yaml.UnmarshalStrict(data, &list); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for i := range list.Items {
			out[list.Items[i].Name] = &list.Items[i]
		}
	}
	return out
}

func loadUpstreamBindings(t *testing.T, files ...string) map[string]*rbacv1.ClusterRoleBinding {
	t.Helper()
	out := map[string]*rbacv1.ClusterRoleBinding{}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join("testdata", "upstream", f))
		if err != nil {
			t.Fatal(err)
		}
		var list rbacv1.ClusterRoleBindingList
		if err := yaml.UnmarshalStrict(data, &list); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for i := range list.Items {
			out[list.Items[i].Name] = &list.Items[i]
		}
	}
	return out
}

// TestClusterRolesMatchUpstream checks every bootstrap ClusterRole against
// Kubernetes 1.36.3's golden files: same rules in the same order, labels,
// annotations and aggregation rule. For admin/edit/view, whose rules
// upstream leaves to the aggregation controller, the expected rules are
// those of the upstream roles aggregated the same way.
func TestClusterRolesMatchUpstream(t *testing.T) {
	upstream := loadUpstreamRoles(t, "cluster-roles.yaml", "controller-roles.yaml")
	var all []*rbacv1.ClusterRole
	for _, r := range upstream {
		all = append(all, r.DeepCopy())
	}
	Aggregate(all)
	aggregated := map[string]*rbacv1.ClusterRole{}
	for _, r := range all {
		aggregated[r.Name] = r
	}

	for _, got := range ClusterRoles() {
		t.Run(got.Name, func(t *testing.T) {
			want, ok := aggregated[got.Name]
			if !ok && strings.HasPrefix(got.Name, "podtrace:") {
				return // podtrace's own addition, documented where it is defined
			}
			if !ok {
				t.Fatalf("no upstream ClusterRole %q", got.Name)
			}
			if !reflect.DeepEqual(got.Rules, want.Rules) {
				gotY, _ := yaml.Marshal(got.Rules)
				wantY, _ := yaml.Marshal(want.Rules)
				t.Errorf("rules differ from upstream\n--- got\n%s--- want\n%s", gotY, wantY)
			}
			if !reflect.DeepEqual(got.Labels, want.Labels) || !reflect.DeepEqual(got.Annotations, want.Annotations) {
				t.Errorf("metadata = %v %v, want %v %v", got.Labels, got.Annotations, want.Labels, want.Annotations)
			}
			if !reflect.DeepEqual(got.AggregationRule, want.AggregationRule) {
				t.Errorf("aggregation rule = %+v, want %+v", got.AggregationRule, want.AggregationRule)
			}
			if got.Kind != "ClusterRole" || got.APIVersion != "rbac.authorization.k8s.io/v1" {
				t.Errorf("type meta = %q %q", got.APIVersion, got.Kind)
			}
		})
	}
}

// TestClusterRoleBindingsMatchUpstream checks role references, metadata and
// subjects against upstream, except for the two documented differences.
func TestClusterRoleBindingsMatchUpstream(t *testing.T) {
	upstream := loadUpstreamBindings(t, "cluster-role-bindings.yaml", "controller-role-bindings.yaml")
	deviations := map[string][]rbacv1.Subject{
		"system:node": {{Kind: "Group", APIGroup: rbacv1.GroupName, Name: "system:nodes"}},
		"system:discovery": {
			{Kind: "Group", APIGroup: rbacv1.GroupName, Name: "system:authenticated"},
			{Kind: "Group", APIGroup: rbacv1.GroupName, Name: "system:unauthenticated"},
		},
	}
	roles := map[string]bool{}
	for _, r := range ClusterRoles() {
		roles[r.Name] = true
	}
	for _, got := range ClusterRoleBindings() {
		t.Run(got.Name, func(t *testing.T) {
			want, ok := upstream[got.Name]
			if !ok && strings.HasPrefix(got.Name, "podtrace:") {
				return
			}
			if !ok {
				t.Fatalf("no upstream ClusterRoleBinding %q", got.Name)
			}
			if got.RoleRef != want.RoleRef {
				t.Errorf("roleRef = %+v, want %+v", got.RoleRef, want.RoleRef)
			}
			if !roles[got.RoleRef.Name] {
				t.Errorf("binds missing ClusterRole %q", got.RoleRef.Name)
			}
			wantSubjects := want.Subjects
			if d, ok := deviations[got.Name]; ok {
				wantSubjects = d
			}
			if !reflect.DeepEqual(got.Subjects, wantSubjects) {
				t.Errorf("subjects = %+v, want %+v", got.Subjects, wantSubjects)
			}
			if !reflect.DeepEqual(got.Labels, want.Labels) || !reflect.DeepEqual(got.Annotations, want.Annotations) {
				t.Errorf("metadata = %v %v, want %v %v", got.Labels, got.Annotations, want.Labels, want.Annotations)
			}
		})
	}
}

func TestObjectsAreFresh(t *testing.T) {
	a := ClusterRoles()
	a[0].Rules = nil
	if b := ClusterRoles(); len(b[0].Rules) == 0 {
		t.Error("ClusterRoles shares state between calls")
	}
}

func TestViewerRoleBinding(t *testing.T) {
	rbs := RoleBindings()
	if len(rbs) != 1 {
		t.Fatalf("%d RoleBindings, want 1", len(rbs))
	}
	rb := rbs[0]
	if rb.Namespace != "default" || rb.RoleRef.Kind != "ClusterRole" || rb.RoleRef.Name != "view" ||
		len(rb.Subjects) != 1 || rb.Subjects[0].Kind != "User" || rb.Subjects[0].Name != "viewer" {
		t.Errorf("viewer binding = %+v", rb)
	}
}
