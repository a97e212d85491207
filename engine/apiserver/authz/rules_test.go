package authz

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

func rule(verbs, groups, resources, names, urls []string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources, ResourceNames: names, NonResourceURLs: urls}
}

func l(s ...string) []string { return s }

func res(verb, group, resource, sub, name string) Attributes {
	return Attributes{ResourceRequest: true, Verb: verb, APIGroup: group, Resource: resource, Subresource: sub, Name: name}
}

func nonres(verb, path string) Attributes { return Attributes{Verb: verb, Path: path} }

// TestRuleAllows carries upstream's TestRuleMatches cases
// (plugin/pkg/auth/authorizer/rbac/rbac_test.go) plus resource names and
// "*/subresource".
func TestRuleAllows(t *testing.T) {
	type check struct {
		a    Attributes
		want bool
	}
	tests := []struct {
		name   string
		rule   rbacv1.PolicyRule
		checks []check
	}{
		{"star verb, exact match other", rule(l("*"), l("group1"), l("resource1"), nil, nil), []check{
			{res("verb1", "group1", "resource1", "", ""), true},
			{res("verb1", "group2", "resource1", "", ""), false},
			{res("verb1", "group1", "resource2", "", ""), false},
			{res("verb2", "group1", "resource1", "", ""), true},
			{res("verb2", "group2", "resource2", "", ""), false},
		}},
		{"star group, exact match other", rule(l("verb1"), l("*"), l("resource1"), nil, nil), []check{
			{res("verb1", "group1", "resource1", "", ""), true},
			{res("verb1", "group2", "resource1", "", ""), true},
			{res("verb1", "group1", "resource2", "", ""), false},
			{res("verb2", "group1", "resource1", "", ""), false},
		}},
		{"star resource, exact match other", rule(l("verb1"), l("group1"), l("*"), nil, nil), []check{
			{res("verb1", "group1", "resource1", "", ""), true},
			{res("verb1", "group2", "resource1", "", ""), false},
			{res("verb1", "group1", "resource2", "", ""), true},
			{res("verb2", "group1", "resource1", "", ""), false},
		}},
		{"tuple expansion", rule(l("verb1", "verb2"), l("group1", "group2"), l("resource1", "resource2"), nil, nil), []check{
			{res("verb1", "group1", "resource1", "", ""), true},
			{res("verb1", "group2", "resource2", "", ""), true},
			{res("verb2", "group2", "resource1", "", ""), true},
			{res("verb3", "group1", "resource1", "", ""), false},
		}},
		{"subresource expansion", rule(l("*"), l("*"), l("resource1/subresource1"), nil, nil), []check{
			{res("verb1", "group1", "resource1", "subresource1", ""), true},
			{res("verb1", "group2", "resource1", "subresource2", ""), false},
			{res("verb1", "group1", "resource2", "subresource1", ""), false},
			{res("verb2", "group1", "resource1", "subresource1", ""), true},
			{res("verb1", "group1", "resource1", "", ""), false},
		}},
		{"plain resource does not cover subresources", rule(l("*"), l(""), l("pods"), nil, nil), []check{
			{res("create", "", "pods", "", ""), true},
			{res("create", "", "pods", "binding", ""), false},
			{res("update", "", "pods", "status", ""), false},
		}},
		{"star slash subresource", rule(l("update"), l(""), l("*/status"), nil, nil), []check{
			{res("update", "", "pods", "status", ""), true},
			{res("update", "", "nodes", "status", ""), true},
			{res("update", "", "pods", "", ""), false},
			{res("update", "", "pods", "binding", ""), false},
		}},
		{"resource names", rule(l("get", "update"), l("coordination.k8s.io"), l("leases"), l("kube-scheduler"), nil), []check{
			{res("get", "coordination.k8s.io", "leases", "", "kube-scheduler"), true},
			{res("get", "coordination.k8s.io", "leases", "", "other"), false},
			{res("list", "coordination.k8s.io", "leases", "", ""), false},
			{res("get", "coordination.k8s.io", "leases", "", ""), false},
		}},
		{"star nonresource, exact match other", rule(l("verb1"), nil, nil, nil, l("*")), []check{
			{nonres("verb1", "/foo"), true},
			{nonres("verb1", "/foo/bar/one"), true},
			{nonres("verb2", "/foo"), false},
		}},
		{"star nonresource subpath", rule(l("verb1"), nil, nil, nil, l("/foo/*")), []check{
			{nonres("verb1", "/foo"), false},
			{nonres("verb1", "/foo/bar"), true},
			{nonres("verb1", "/foo/baz/one"), true},
			{nonres("verb1", "/notfoo"), false},
			{nonres("verb1", "/notfoo/bar"), false},
		}},
		{"star verb, exact nonresource", rule(l("*"), nil, nil, nil, l("/foo", "/foo/bar/one")), []check{
			{nonres("verb1", "/foo"), true},
			{nonres("verb1", "/foo/bar"), false},
			{nonres("verb2", "/foo/bar/one"), true},
			{nonres("verb2", "/foo/baz/one"), false},
		}},
		{"resource rule never matches a path", rule(l("*"), l("*"), l("*"), nil, nil), []check{
			{nonres("get", "/version"), false},
		}},
		{"url rule never matches a resource", rule(l("*"), nil, nil, nil, l("*")), []check{
			{res("get", "", "pods", "", ""), false},
		}},
	}
	for _, tt := range tests {
		for _, c := range tt.checks {
			if got := RuleAllows(c.a, &tt.rule); got != c.want {
				t.Errorf("%s: RuleAllows(%+v) = %v, want %v", tt.name, c.a, got, c.want)
			}
		}
	}
}
