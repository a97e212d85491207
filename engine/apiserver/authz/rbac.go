package authz

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/podtrace/podtrace/engine/apiserver/authn"
)

// RBACLister reads the RBAC objects the authorizer evaluates. The API server
// implements it from its watch cache. Get methods return an error for a
// missing object; it appears in the 403 reason, so make it the
// upstream NotFound (apierrors.NewNotFound(rbacv1.Resource("clusterrole"),
// name) reads `clusterrole.rbac.authorization.k8s.io "name" not found`).
// Callers must not modify the returned objects.
type RBACLister interface {
	ListClusterRoleBindings() ([]*rbacv1.ClusterRoleBinding, error)
	GetClusterRole(name string) (*rbacv1.ClusterRole, error)
	ListRoleBindings(namespace string) ([]*rbacv1.RoleBinding, error)
	GetRole(namespace, name string) (*rbacv1.Role, error)
}

// RBAC authorizes requests from RBAC roles and bindings, with the semantics
// of kube-apiserver's RBAC authorizer: it allows when a rule bound to the
// user allows, and otherwise has no opinion (RBAC never denies).
type RBAC struct {
	lister RBACLister
}

// NewRBAC returns an RBAC authorizer reading from l.
func NewRBAC(l RBACLister) *RBAC { return &RBAC{lister: l} }

// Authorize implements Authorizer. An allowed request's reason names the
// binding that allowed it ("RBAC: allowed by ClusterRoleBinding ..."); a
// request that is not allowed has an empty reason unless roles could not be
// resolved, in which case the reason is "RBAC: " and the resolution errors.
func (r *RBAC) Authorize(_ context.Context, a Attributes) (Decision, string, error) {
	var errs []error
	allowedBy := ""
	r.VisitRulesFor(a.User, a.Namespace, func(source fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool {
		if rule != nil && RuleAllows(a, rule) {
			allowedBy = source.String()
			return false
		}
		if err != nil {
			errs = append(errs, err)
		}
		return true
	})
	if allowedBy != "" {
		return DecisionAllow, "RBAC: allowed by " + allowedBy, nil
	}
	if len(errs) > 0 {
		return DecisionNoOpinion, "RBAC: " + utilerrors.NewAggregate(errs).Error(), nil
	}
	return DecisionNoOpinion, "", nil
}

// RulesFor returns every rule that applies to user in namespace (cluster-wide
// rules only when namespace is empty), and the errors met resolving them.
func (r *RBAC) RulesFor(user authn.User, namespace string) ([]rbacv1.PolicyRule, error) {
	var (
		rules []rbacv1.PolicyRule
		errs  []error
	)
	r.VisitRulesFor(user, namespace, func(_ fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool {
		if rule != nil {
			rules = append(rules, *rule)
		}
		if err != nil {
			errs = append(errs, err)
		}
		return true
	})
	return rules, errors.Join(errs...)
}

// VisitRulesFor calls visit with each rule bound to user: first through
// ClusterRoleBindings, then (if namespace is set) through RoleBindings in
// namespace. Resolution errors are passed with a nil rule. Visiting stops
// when visit returns false.
func (r *RBAC) VisitRulesFor(user authn.User, namespace string, visit func(source fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool) {
	if crbs, err := r.lister.ListClusterRoleBindings(); err != nil {
		if !visit(nil, nil, err) {
			return
		}
	} else {
		for _, crb := range crbs {
			i, ok := appliesTo(user, crb.Subjects, "")
			if !ok {
				continue
			}
			rules, err := r.roleRefRules(crb.RoleRef, "")
			if err != nil {
				if !visit(nil, nil, err) {
					return
				}
				continue
			}
			source := clusterRoleBindingSource{binding: crb, subject: &crb.Subjects[i]}
			for j := range rules {
				if !visit(source, &rules[j], nil) {
					return
				}
			}
		}
	}
	if namespace == "" {
		return
	}
	rbs, err := r.lister.ListRoleBindings(namespace)
	if err != nil {
		visit(nil, nil, err)
		return
	}
	for _, rb := range rbs {
		i, ok := appliesTo(user, rb.Subjects, namespace)
		if !ok {
			continue
		}
		rules, err := r.roleRefRules(rb.RoleRef, namespace)
		if err != nil {
			if !visit(nil, nil, err) {
				return
			}
			continue
		}
		source := roleBindingSource{binding: rb, subject: &rb.Subjects[i]}
		for j := range rules {
			if !visit(source, &rules[j], nil) {
				return
			}
		}
	}
}

func (r *RBAC) roleRefRules(ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, error) {
	switch ref.Kind {
	case "Role":
		role, err := r.lister.GetRole(namespace, ref.Name)
		if err != nil {
			return nil, err
		}
		return role.Rules, nil
	case "ClusterRole":
		role, err := r.lister.GetClusterRole(ref.Name)
		if err != nil {
			return nil, err
		}
		return role.Rules, nil
	default:
		return nil, fmt.Errorf("unsupported role reference kind: %q", ref.Kind)
	}
}

// appliesTo returns the index of the first subject that names user.
func appliesTo(user authn.User, subjects []rbacv1.Subject, namespace string) (int, bool) {
	for i, s := range subjects {
		if appliesToUser(user, s, namespace) {
			return i, true
		}
	}
	return 0, false
}

func appliesToUser(user authn.User, s rbacv1.Subject, namespace string) bool {
	switch s.Kind {
	case rbacv1.UserKind:
		return user.Name == s.Name
	case rbacv1.GroupKind:
		return slices.Contains(user.Groups, s.Name)
	case rbacv1.ServiceAccountKind:
		// A RoleBinding may leave its service account's namespace out; it
		// then means the binding's own namespace.
		saNamespace := namespace
		if s.Namespace != "" {
			saNamespace = s.Namespace
		}
		if saNamespace == "" {
			return false
		}
		return user.Name == authn.ServiceAccountUsername(saNamespace, s.Name)
	}
	return false
}

// RuleAllows reports whether rule allows the request a, as upstream's
// rbac.RuleAllows: resource requests match verb, API group, resource (with
// subresource as "pods/status", or "*/status") and resource name; other
// requests match verb and non-resource URL.
func RuleAllows(a Attributes, rule *rbacv1.PolicyRule) bool {
	if a.ResourceRequest {
		combined := a.Resource
		if a.Subresource != "" {
			combined = a.Resource + "/" + a.Subresource
		}
		return VerbMatches(rule, a.Verb) &&
			APIGroupMatches(rule, a.APIGroup) &&
			ResourceMatches(rule, combined, a.Subresource) &&
			ResourceNameMatches(rule, a.Name)
	}
	return VerbMatches(rule, a.Verb) && NonResourceURLMatches(rule, a.Path)
}

// RulesAllow reports whether any of rules allows a.
func RulesAllow(a Attributes, rules ...rbacv1.PolicyRule) bool {
	for i := range rules {
		if RuleAllows(a, &rules[i]) {
			return true
		}
	}
	return false
}

// VerbMatches reports whether rule lists verb or "*".
func VerbMatches(rule *rbacv1.PolicyRule, verb string) bool {
	for _, v := range rule.Verbs {
		if v == rbacv1.VerbAll || v == verb {
			return true
		}
	}
	return false
}

// APIGroupMatches reports whether rule lists group or "*".
func APIGroupMatches(rule *rbacv1.PolicyRule, group string) bool {
	for _, g := range rule.APIGroups {
		if g == rbacv1.APIGroupAll || g == group {
			return true
		}
	}
	return false
}

// ResourceMatches reports whether rule lists "*", the combined
// "resource/subresource" name, or "*/subresource".
func ResourceMatches(rule *rbacv1.PolicyRule, combined, subresource string) bool {
	for _, r := range rule.Resources {
		if r == rbacv1.ResourceAll || r == combined {
			return true
		}
		if subresource == "" {
			continue
		}
		if len(r) == len(subresource)+2 && strings.HasPrefix(r, "*/") && strings.HasSuffix(r, subresource) {
			return true
		}
	}
	return false
}

// ResourceNameMatches reports whether rule has no resource names or lists
// name. (A rule with resource names never matches a nameless request.)
func ResourceNameMatches(rule *rbacv1.PolicyRule, name string) bool {
	if len(rule.ResourceNames) == 0 {
		return true
	}
	return slices.Contains(rule.ResourceNames, name)
}

// NonResourceURLMatches reports whether rule lists "*", the path, or a
// prefix of it ending in "*".
func NonResourceURLMatches(rule *rbacv1.PolicyRule, path string) bool {
	for _, u := range rule.NonResourceURLs {
		if u == rbacv1.NonResourceAll || u == path {
			return true
		}
		if strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimRight(u, "*")) {
			return true
		}
	}
	return false
}

type clusterRoleBindingSource struct {
	binding *rbacv1.ClusterRoleBinding
	subject *rbacv1.Subject
}

func (s clusterRoleBindingSource) String() string {
	return fmt.Sprintf("ClusterRoleBinding %q of %s %q to %s",
		s.binding.Name, s.binding.RoleRef.Kind, s.binding.RoleRef.Name, describeSubject(s.subject, ""))
}

type roleBindingSource struct {
	binding *rbacv1.RoleBinding
	subject *rbacv1.Subject
}

func (s roleBindingSource) String() string {
	return fmt.Sprintf("RoleBinding %q of %s %q to %s",
		s.binding.Name+"/"+s.binding.Namespace, s.binding.RoleRef.Kind, s.binding.RoleRef.Name, describeSubject(s.subject, s.binding.Namespace))
}

func describeSubject(s *rbacv1.Subject, bindingNamespace string) string {
	if s.Kind == rbacv1.ServiceAccountKind {
		ns := s.Namespace
		if ns == "" {
			ns = bindingNamespace
		}
		return fmt.Sprintf("%s %q", s.Kind, s.Name+"/"+ns)
	}
	return fmt.Sprintf("%s %q", s.Kind, s.Name)
}
