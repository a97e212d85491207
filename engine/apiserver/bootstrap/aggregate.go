package bootstrap

import (
	"sort"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Aggregate fills the rules of every role in roles that has an
// AggregationRule, as kube-controller-manager's clusterrole-aggregation
// controller does: for each selector in turn, the matching roles sorted by
// name, their rules appended unless already present. Aggregated roles that
// select other aggregated roles (admin selects edit) are resolved first.
func Aggregate(roles []*rbacv1.ClusterRole) {
	done := map[string]bool{}
	var resolve func(r *rbacv1.ClusterRole, visiting map[string]bool)
	resolve = func(r *rbacv1.ClusterRole, visiting map[string]bool) {
		if r.AggregationRule == nil || done[r.Name] || visiting[r.Name] {
			return
		}
		visiting[r.Name] = true
		var rules []rbacv1.PolicyRule
		seen := map[string]bool{}
		for i := range r.AggregationRule.ClusterRoleSelectors {
			selector, err := metav1.LabelSelectorAsSelector(&r.AggregationRule.ClusterRoleSelectors[i])
			if err != nil {
				continue
			}
			var matched []*rbacv1.ClusterRole
			for _, other := range roles {
				if other.Name != r.Name && !seen[other.Name] && selector.Matches(labels.Set(other.Labels)) {
					matched = append(matched, other)
				}
			}
			sort.Slice(matched, func(i, j int) bool { return matched[i].Name < matched[j].Name })
			for _, other := range matched {
				seen[other.Name] = true
				resolve(other, visiting)
				for _, rule := range other.Rules {
					if !ruleExists(rules, rule) {
						rules = append(rules, *rule.DeepCopy())
					}
				}
			}
		}
		r.Rules = rules
		done[r.Name] = true
	}
	for _, r := range roles {
		resolve(r, map[string]bool{})
	}
}

func ruleExists(haystack []rbacv1.PolicyRule, needle rbacv1.PolicyRule) bool {
	for _, curr := range haystack {
		if equality.Semantic.DeepEqual(curr, needle) {
			return true
		}
	}
	return false
}
