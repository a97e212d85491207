package bootstrap

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
)

// ruleBuilder builds a PolicyRule the way upstream's rbacv1helpers.NewRule
// does: every list sorted and without duplicates, so the objects serialize
// exactly like kube-apiserver's bootstrap roles.
type ruleBuilder struct {
	rule rbacv1.PolicyRule
}

func newRule(verbs ...string) *ruleBuilder {
	return &ruleBuilder{rule: rbacv1.PolicyRule{Verbs: set(verbs)}}
}

func (b *ruleBuilder) groups(groups ...string) *ruleBuilder {
	b.rule.APIGroups = set(append(b.rule.APIGroups, groups...))
	return b
}

func (b *ruleBuilder) resources(resources ...string) *ruleBuilder {
	b.rule.Resources = set(append(b.rule.Resources, resources...))
	return b
}

func (b *ruleBuilder) names(names ...string) *ruleBuilder {
	b.rule.ResourceNames = set(append(b.rule.ResourceNames, names...))
	return b
}

func (b *ruleBuilder) urls(urls ...string) *ruleBuilder {
	b.rule.NonResourceURLs = set(append(b.rule.NonResourceURLs, urls...))
	return b
}

// build returns the rule; it panics on a rule upstream's RuleOrDie rejects,
// which can only come from a mistake in this package's static tables.
func (b *ruleBuilder) build() rbacv1.PolicyRule {
	r := b.rule
	switch {
	case len(r.Verbs) == 0:
		panic("bootstrap: rule without verbs")
	case len(r.NonResourceURLs) > 0 && (len(r.APIGroups) > 0 || len(r.Resources) > 0 || len(r.ResourceNames) > 0):
		panic("bootstrap: non-resource rule mixed with resources")
	case len(r.NonResourceURLs) == 0 && (len(r.APIGroups) == 0 || len(r.Resources) == 0):
		panic("bootstrap: resource rule needs groups and resources")
	}
	return r
}

func set(items []string) []string {
	out := slices.Clone(items)
	slices.Sort(out)
	return slices.Compact(out)
}
