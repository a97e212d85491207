package validation

import (
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Deployment validates a deployment on create (apps ValidateDeployment).
func Deployment(d *appsv1.Deployment) field.ErrorList {
	allErrs := objectMetaNamespaced(&d.ObjectMeta)
	return append(allErrs, deploymentSpec(&d.Spec, field.NewPath("spec"))...)
}

// DeploymentUpdate validates a deployment update; the selector is immutable.
func DeploymentUpdate(d, old *appsv1.Deployment) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&d.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, deploymentSpec(&d.Spec, field.NewPath("spec"))...)
	return append(allErrs, apimachineryvalidation.ValidateImmutableField(d.Spec.Selector, old.Spec.Selector, field.NewPath("spec", "selector"))...)
}

// ReplicaSet validates a replica set on create (apps ValidateReplicaSet).
func ReplicaSet(rs *appsv1.ReplicaSet) field.ErrorList {
	allErrs := objectMetaNamespaced(&rs.ObjectMeta)
	return append(allErrs, replicaSetSpec(&rs.Spec, field.NewPath("spec"))...)
}

// ReplicaSetUpdate validates a replica set update; the selector is immutable.
func ReplicaSetUpdate(rs, old *appsv1.ReplicaSet) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&rs.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, replicaSetSpec(&rs.Spec, field.NewPath("spec"))...)
	return append(allErrs, apimachineryvalidation.ValidateImmutableField(rs.Spec.Selector, old.Spec.Selector, field.NewPath("spec", "selector"))...)
}

func replicas(r *int32) int32 {
	if r == nil {
		return 0
	}
	return *r
}

func selectorAndTemplate(sel *metav1.LabelSelector, t *corev1.PodTemplateSpec, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if sel == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("selector"), ""))
	} else {
		allErrs = append(allErrs, metavalidation.ValidateLabelSelector(sel, metavalidation.LabelSelectorValidationOptions{}, fldPath.Child("selector"))...)
		if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("selector"), sel, "empty selector is invalid for deployment"))
		}
	}
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return append(allErrs, field.Invalid(fldPath.Child("selector"), sel, "invalid label selector"))
	}
	return append(allErrs, podTemplateForReplicaSet(t, selector, fldPath.Child("template"))...)
}

func podTemplateForReplicaSet(t *corev1.PodTemplateSpec, selector labels.Selector, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if !selector.Empty() && !selector.Matches(labels.Set(t.Labels)) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("metadata", "labels"), t.Labels, "`selector` does not match template `labels`"))
	}
	allErrs = append(allErrs, PodTemplateSpec(t, fldPath)...)
	if t.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("spec", "restartPolicy"), t.Spec.RestartPolicy, []string{string(corev1.RestartPolicyAlways)}))
	}
	if t.Spec.ActiveDeadlineSeconds != nil {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in ReplicaSet is not Supported"))
	}
	return allErrs
}

func deploymentSpec(s *appsv1.DeploymentSpec, fldPath *field.Path) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateNonnegativeField(int64(replicas(s.Replicas)), fldPath.Child("replicas"))
	allErrs = append(allErrs, selectorAndTemplate(s.Selector, &s.Template, fldPath)...)
	allErrs = append(allErrs, deploymentStrategy(&s.Strategy, fldPath.Child("strategy"))...)
	allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(int64(s.MinReadySeconds), fldPath.Child("minReadySeconds"))...)
	if s.RevisionHistoryLimit != nil {
		allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(int64(*s.RevisionHistoryLimit), fldPath.Child("revisionHistoryLimit"))...)
	}
	if s.ProgressDeadlineSeconds != nil {
		allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(int64(*s.ProgressDeadlineSeconds), fldPath.Child("progressDeadlineSeconds"))...)
		if *s.ProgressDeadlineSeconds <= s.MinReadySeconds {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("progressDeadlineSeconds"), s.ProgressDeadlineSeconds, "must be greater than minReadySeconds"))
		}
	}
	return allErrs
}

func replicaSetSpec(s *appsv1.ReplicaSetSpec, fldPath *field.Path) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateNonnegativeField(int64(replicas(s.Replicas)), fldPath.Child("replicas"))
	allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(int64(s.MinReadySeconds), fldPath.Child("minReadySeconds"))...)
	return append(allErrs, selectorAndTemplate(s.Selector, &s.Template, fldPath)...)
}

func deploymentStrategy(s *appsv1.DeploymentStrategy, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	switch s.Type {
	case appsv1.RecreateDeploymentStrategyType:
		if s.RollingUpdate != nil {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'"))
		}
	case appsv1.RollingUpdateDeploymentStrategyType:
		if s.RollingUpdate == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("rollingUpdate"), "this should be defaulted and never be nil"))
		} else {
			allErrs = append(allErrs, rollingUpdate(s.RollingUpdate, fldPath.Child("rollingUpdate"))...)
		}
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath, s, []string{string(appsv1.RecreateDeploymentStrategyType), string(appsv1.RollingUpdateDeploymentStrategyType)}))
	}
	return allErrs
}

func rollingUpdate(ru *appsv1.RollingUpdateDeployment, fldPath *field.Path) field.ErrorList {
	var maxUnavailable, maxSurge intstr.IntOrString
	if ru.MaxUnavailable != nil {
		maxUnavailable = *ru.MaxUnavailable
	}
	if ru.MaxSurge != nil {
		maxSurge = *ru.MaxSurge
	}
	allErrs := positiveIntOrPercent(maxUnavailable, fldPath.Child("maxUnavailable"))
	allErrs = append(allErrs, positiveIntOrPercent(maxSurge, fldPath.Child("maxSurge"))...)
	if intOrPercentValue(maxUnavailable) == 0 && intOrPercentValue(maxSurge) == 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("maxUnavailable"), maxUnavailable, "may not be 0 when `maxSurge` is 0"))
	}
	if v, isPercent := percentValue(maxUnavailable); isPercent && v > 100 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("maxUnavailable"), maxUnavailable, "must not be greater than 100%"))
	}
	return allErrs
}

func positiveIntOrPercent(v intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	switch v.Type {
	case intstr.String:
		for _, msg := range validation.IsValidPercent(v.StrVal) {
			allErrs = append(allErrs, field.Invalid(fldPath, v, msg))
		}
	case intstr.Int:
		allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(int64(v.IntValue()), fldPath)...)
	default:
		allErrs = append(allErrs, field.Invalid(fldPath, v, "must be an integer or percentage (e.g '5%%')"))
	}
	return allErrs
}

func percentValue(v intstr.IntOrString) (int, bool) {
	if v.Type != intstr.String {
		return 0, false
	}
	s := strings.TrimSuffix(v.StrVal, "%")
	n, err := strconv.Atoi(s)
	if err != nil || !strings.HasSuffix(v.StrVal, "%") {
		return 0, false
	}
	return n, true
}

func intOrPercentValue(v intstr.IntOrString) int {
	if n, ok := percentValue(v); ok {
		return n
	}
	return v.IntValue()
}
