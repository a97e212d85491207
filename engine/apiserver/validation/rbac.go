package validation

import (
	rbacv1 "k8s.io/api/rbac/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// rbacName is upstream's ValidateRBACName: any valid path segment.
func rbacName(name string, prefix bool) []string {
	return path.IsValidPathSegmentName(name)
}

func policyRules(rules []rbacv1.PolicyRule, namespaced bool) field.ErrorList {
	allErrs := field.ErrorList{}
	for i, rule := range rules {
		fldPath := field.NewPath("rules").Index(i)
		if len(rule.Verbs) == 0 {
			allErrs = append(allErrs, field.Required(fldPath.Child("verbs"), "verbs must contain at least one value"))
		}
		if len(rule.NonResourceURLs) > 0 {
			if namespaced {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("nonResourceURLs"), rule.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
			}
			if len(rule.APIGroups) > 0 || len(rule.Resources) > 0 || len(rule.ResourceNames) > 0 {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("nonResourceURLs"), rule.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
			}
			continue
		}
		if len(rule.APIGroups) == 0 {
			allErrs = append(allErrs, field.Required(fldPath.Child("apiGroups"), "resource rules must supply at least one api group"))
		}
		if len(rule.Resources) == 0 {
			allErrs = append(allErrs, field.Required(fldPath.Child("resources"), "resource rules must supply at least one resource"))
		}
	}
	return allErrs
}

// Role validates a Role.
func Role(r *rbacv1.Role) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&r.ObjectMeta, true, rbacName, field.NewPath("metadata"))
	return append(allErrs, policyRules(r.Rules, true)...)
}

// ClusterRole validates a ClusterRole.
func ClusterRole(r *rbacv1.ClusterRole) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&r.ObjectMeta, false, rbacName, field.NewPath("metadata"))
	if r.AggregationRule != nil && len(r.AggregationRule.ClusterRoleSelectors) == 0 {
		allErrs = append(allErrs, field.Required(field.NewPath("aggregationRule", "clusterRoleSelectors"), "at least one clusterRoleSelector required if aggregationRule is non-nil"))
	}
	return append(allErrs, policyRules(r.Rules, false)...)
}

// RoleBinding validates a RoleBinding.
func RoleBinding(b *rbacv1.RoleBinding) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&b.ObjectMeta, true, rbacName, field.NewPath("metadata"))
	allErrs = append(allErrs, roleRef(b.RoleRef, []string{"Role", "ClusterRole"})...)
	for i, s := range b.Subjects {
		allErrs = append(allErrs, subject(s, true, field.NewPath("subjects").Index(i))...)
	}
	return allErrs
}

// ClusterRoleBinding validates a ClusterRoleBinding.
func ClusterRoleBinding(b *rbacv1.ClusterRoleBinding) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&b.ObjectMeta, false, rbacName, field.NewPath("metadata"))
	allErrs = append(allErrs, roleRef(b.RoleRef, []string{"ClusterRole"})...)
	for i, s := range b.Subjects {
		allErrs = append(allErrs, subject(s, false, field.NewPath("subjects").Index(i))...)
	}
	return allErrs
}

func roleRefChanged(newRef, oldRef rbacv1.RoleRef) field.ErrorList {
	if newRef != oldRef {
		return field.ErrorList{field.Invalid(field.NewPath("roleRef"), newRef, "cannot change roleRef")}
	}
	return nil
}

func roleRef(ref rbacv1.RoleRef, kinds []string) field.ErrorList {
	allErrs := field.ErrorList{}
	if ref.APIGroup != rbacv1.GroupName {
		allErrs = append(allErrs, field.NotSupported(field.NewPath("roleRef", "apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	ok := false
	for _, k := range kinds {
		ok = ok || ref.Kind == k
	}
	if !ok {
		allErrs = append(allErrs, field.NotSupported(field.NewPath("roleRef", "kind"), ref.Kind, kinds))
	}
	if len(ref.Name) == 0 {
		allErrs = append(allErrs, field.Required(field.NewPath("roleRef", "name"), ""))
	} else {
		for _, msg := range rbacName(ref.Name, false) {
			allErrs = append(allErrs, field.Invalid(field.NewPath("roleRef", "name"), ref.Name, msg))
		}
	}
	return allErrs
}

func subject(s rbacv1.Subject, namespaced bool, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if len(s.Name) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("name"), ""))
	}
	switch s.Kind {
	case rbacv1.ServiceAccountKind:
		if len(s.Name) > 0 {
			for _, msg := range apimachineryvalidation.ValidateServiceAccountName(s.Name, false) {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("name"), s.Name, msg))
			}
		}
		if len(s.APIGroup) > 0 {
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("apiGroup"), s.APIGroup, []string{""}))
		}
		if !namespaced && len(s.Namespace) == 0 {
			allErrs = append(allErrs, field.Required(fldPath.Child("namespace"), ""))
		}
	case rbacv1.UserKind, rbacv1.GroupKind:
		if s.APIGroup != rbacv1.GroupName {
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
		}
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("kind"), s.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
	}
	return allErrs
}
