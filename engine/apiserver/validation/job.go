package validation

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// notServed is the detail of the 422 for Job features podtrace's Job
// controller does not run (upstream accepts them).
const notServed = "not supported by podtrace's Job controller"

// Job validates a defaulted Job whose selector the strategy generated, as
// ValidateJob (pkg/apis/batch/validation) does. Indexed completion,
// podFailurePolicy, successPolicy, backoffLimitPerIndex and maxFailedIndexes
// are refused as unsupported.
func Job(j *batchv1.Job) field.ErrorList {
	allErrs := objectMetaNamespaced(&j.ObjectMeta)
	allErrs = append(allErrs, generatedJobSelector(j)...)
	return append(allErrs, jobSpec(&j.Spec, field.NewPath("spec"))...)
}

// JobUpdate validates a Job update (ValidateJobUpdate): the selector,
// completions, completionMode, podFailurePolicy, backoffLimitPerIndex,
// managedBy and successPolicy are immutable, and so is the pod template.
func JobUpdate(j, old *batchv1.Job) field.ErrorList {
	fldPath := field.NewPath("spec")
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&j.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, jobSpec(&j.Spec, fldPath)...)
	immutable := []struct {
		name     string
		new, old interface{}
	}{
		{"completions", j.Spec.Completions, old.Spec.Completions},
		{"selector", j.Spec.Selector, old.Spec.Selector},
		{"template", j.Spec.Template, old.Spec.Template},
		{"completionMode", j.Spec.CompletionMode, old.Spec.CompletionMode},
		{"podFailurePolicy", j.Spec.PodFailurePolicy, old.Spec.PodFailurePolicy},
		{"backoffLimitPerIndex", j.Spec.BackoffLimitPerIndex, old.Spec.BackoffLimitPerIndex},
		{"managedBy", j.Spec.ManagedBy, old.Spec.ManagedBy},
		{"successPolicy", j.Spec.SuccessPolicy, old.Spec.SuccessPolicy},
	}
	for _, f := range immutable {
		allErrs = append(allErrs, apimachineryvalidation.ValidateImmutableField(f.new, f.old, fldPath.Child(f.name))...)
	}
	return allErrs
}

// generatedJobSelector is validateGeneratedSelector: without a manual
// selector the template must carry the generated labels and the selector
// must match them.
func generatedJobSelector(j *batchv1.Job) field.ErrorList {
	allErrs := field.ErrorList{}
	if (j.Spec.ManualSelector != nil && *j.Spec.ManualSelector) || j.Spec.Selector == nil {
		return allErrs
	}
	if j.UID == "" {
		allErrs = append(allErrs, field.Required(field.NewPath("metadata", "uid"), ""))
	}
	expected := map[string]string{
		"controller-uid": string(j.UID), "job-name": j.Name,
		batchv1.ControllerUidLabel: string(j.UID), batchv1.JobNameLabel: j.Name,
	}
	path := field.NewPath("spec", "template", "metadata")
	for _, k := range []string{"controller-uid", "job-name", batchv1.ControllerUidLabel, batchv1.JobNameLabel} {
		allErrs = append(allErrs, hasLabel(j.Spec.Template.Labels, path, k, expected[k])...)
	}
	if sel, err := metav1.LabelSelectorAsSelector(j.Spec.Selector); err == nil && !sel.Matches(labels.Set(expected)) {
		allErrs = append(allErrs, field.Invalid(field.NewPath("spec", "selector"), j.Spec.Selector, "`selector` not auto-generated"))
	}
	return allErrs
}

// hasLabel is ValidateHasLabel.
func hasLabel(l map[string]string, fldPath *field.Path, key, value string) field.ErrorList {
	actual, found := l[key]
	if !found {
		return field.ErrorList{field.Required(fldPath.Child("labels").Key(key), value)}
	}
	if actual != value {
		return field.ErrorList{field.Invalid(fldPath.Child("labels").Key(key), l, "must be '"+value+"'")}
	}
	return nil
}

func jobSpec(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	for _, f := range []struct {
		name string
		v    *int32
	}{{"parallelism", spec.Parallelism}, {"completions", spec.Completions}, {"backoffLimit", spec.BackoffLimit},
		{"ttlSecondsAfterFinished", spec.TTLSecondsAfterFinished}} {
		if f.v != nil && *f.v < 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child(f.name), int64(*f.v), "must be greater than or equal to 0"))
		}
	}
	if v := spec.ActiveDeadlineSeconds; v != nil && *v < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("activeDeadlineSeconds"), *v, "must be greater than or equal to 0"))
	}
	if spec.ManagedBy != nil {
		allErrs = append(allErrs, utilvalidation.IsDomainPrefixedPath(fldPath.Child("managedBy"), *spec.ManagedBy)...)
	}
	allErrs = append(allErrs, unsupportedJobFeatures(spec, fldPath)...)
	if spec.Selector == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("selector"), ""))
	} else {
		allErrs = append(allErrs, metavalidation.ValidateLabelSelector(spec.Selector, metavalidation.LabelSelectorValidationOptions{}, fldPath.Child("selector"))...)
	}
	if sel, err := metav1.LabelSelectorAsSelector(spec.Selector); err == nil && !sel.Matches(labels.Set(spec.Template.Labels)) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("template", "metadata", "labels"), spec.Template.Labels, "`selector` does not match template `labels`"))
	}
	allErrs = append(allErrs, PodTemplateSpec(&spec.Template, fldPath.Child("template"))...)
	switch rp := spec.Template.Spec.RestartPolicy; rp {
	case corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever:
	case corev1.RestartPolicyAlways, "":
		allErrs = append(allErrs, field.Required(fldPath.Child("template", "spec", "restartPolicy"),
			fmt.Sprintf("valid values: %q, %q", corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever)))
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("template", "spec", "restartPolicy"), rp,
			[]corev1.RestartPolicy{corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}))
	}
	return allErrs
}

// unsupportedJobFeatures refuses what the Job controller does not run.
func unsupportedJobFeatures(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if m := spec.CompletionMode; m != nil && *m != batchv1.NonIndexedCompletion {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("completionMode"), *m, []batchv1.CompletionMode{batchv1.NonIndexedCompletion}))
	}
	for _, f := range []struct {
		name string
		set  bool
	}{{"podFailurePolicy", spec.PodFailurePolicy != nil}, {"successPolicy", spec.SuccessPolicy != nil},
		{"backoffLimitPerIndex", spec.BackoffLimitPerIndex != nil}, {"maxFailedIndexes", spec.MaxFailedIndexes != nil}} {
		if f.set {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child(f.name), notServed))
		}
	}
	return allErrs
}
