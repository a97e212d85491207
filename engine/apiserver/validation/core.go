package validation

import (
	"fmt"
	"reflect"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxSecretSize is core.MaxSecretSize (1 MiB).
const maxSecretSize = 1 * 1024 * 1024

// Namespace validates a namespace (ValidateNamespace).
func Namespace(ns *corev1.Namespace) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&ns.ObjectMeta, false, apimachineryvalidation.ValidateNamespaceName, field.NewPath("metadata"))
	for i := range ns.Spec.Finalizers {
		allErrs = append(allErrs, apimachineryvalidation.ValidateFinalizerName(string(ns.Spec.Finalizers[i]), field.NewPath("spec", "finalizers"))...)
	}
	return allErrs
}

// Node validates a node (the metadata, taint and resource parts of
// ValidateNode).
func Node(n *corev1.Node) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&n.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	taintsPath := field.NewPath("metadata", "taints")
	seen := map[string]bool{}
	for i, t := range n.Spec.Taints {
		idx := taintsPath.Index(i)
		allErrs = append(allErrs, metavalidation.ValidateLabelName(t.Key, idx.Child("key"))...)
		if errs := validation.IsValidLabelValue(t.Value); len(errs) != 0 {
			allErrs = append(allErrs, field.Invalid(idx.Child("value"), t.Value, joinSemicolon(errs)))
		}
		allErrs = append(allErrs, taintEffect(t.Effect, false, idx.Child("effect"))...)
		key := t.Key + "=" + string(t.Effect)
		if seen[key] {
			dup := field.Duplicate(idx, t)
			dup.Detail = "taints must be unique by key and effect pair"
			allErrs = append(allErrs, dup)
		}
		seen[key] = true
	}
	for k, v := range n.Status.Capacity {
		allErrs = append(allErrs, ResourceQuantityValue(k, v, field.NewPath("status", "capacity").Key(string(k)))...)
	}
	for k, v := range n.Status.Allocatable {
		allErrs = append(allErrs, ResourceQuantityValue(k, v, field.NewPath("status", "allocatable").Key(string(k)))...)
	}
	return allErrs
}

func joinSemicolon(msgs []string) string {
	out := ""
	for i, m := range msgs {
		if i > 0 {
			out += ";"
		}
		out += m
	}
	return out
}

// ConfigMap validates a config map (ValidateConfigMap).
func ConfigMap(cm *corev1.ConfigMap) field.ErrorList {
	allErrs := objectMetaNamespaced(&cm.ObjectMeta)
	total := 0
	for key, value := range cm.Data {
		for _, msg := range validation.IsConfigMapKey(key) {
			allErrs = append(allErrs, field.Invalid(field.NewPath("data").Key(key), key, msg))
		}
		if _, dup := cm.BinaryData[key]; dup {
			allErrs = append(allErrs, field.Invalid(field.NewPath("data").Key(key), key, "duplicate of key present in binaryData"))
		}
		total += len(value)
	}
	for key, value := range cm.BinaryData {
		for _, msg := range validation.IsConfigMapKey(key) {
			allErrs = append(allErrs, field.Invalid(field.NewPath("binaryData").Key(key), key, msg))
		}
		total += len(value)
	}
	if total > maxSecretSize {
		allErrs = append(allErrs, field.TooLong(field.NewPath(""), "", maxSecretSize))
	}
	return allErrs
}

// Secret validates a secret (ValidateSecret, for the types podtrace uses).
func Secret(s *corev1.Secret) field.ErrorList {
	allErrs := objectMetaNamespaced(&s.ObjectMeta)
	dataPath := field.NewPath("data")
	total := 0
	for key, value := range s.Data {
		for _, msg := range validation.IsConfigMapKey(key) {
			allErrs = append(allErrs, field.Invalid(dataPath.Key(key), key, msg))
		}
		total += len(value)
	}
	if total > maxSecretSize {
		allErrs = append(allErrs, field.TooLong(dataPath, "", maxSecretSize))
	}
	switch s.Type {
	case corev1.SecretTypeServiceAccountToken:
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			allErrs = append(allErrs, field.Required(field.NewPath("metadata", "annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	case corev1.SecretTypeDockerConfigJson:
		if _, ok := s.Data[corev1.DockerConfigJsonKey]; !ok {
			allErrs = append(allErrs, field.Required(dataPath.Key(corev1.DockerConfigJsonKey), ""))
		}
	case corev1.SecretTypeBasicAuth:
		_, u := s.Data[corev1.BasicAuthUsernameKey]
		_, p := s.Data[corev1.BasicAuthPasswordKey]
		if !u && !p {
			allErrs = append(allErrs, field.Required(dataPath.Key(corev1.BasicAuthUsernameKey), ""))
			allErrs = append(allErrs, field.Required(dataPath.Key(corev1.BasicAuthPasswordKey), ""))
		}
	case corev1.SecretTypeTLS:
		if _, ok := s.Data[corev1.TLSCertKey]; !ok {
			allErrs = append(allErrs, field.Required(dataPath.Key(corev1.TLSCertKey), ""))
		}
		if _, ok := s.Data[corev1.TLSPrivateKeyKey]; !ok {
			allErrs = append(allErrs, field.Required(dataPath.Key(corev1.TLSPrivateKeyKey), ""))
		}
	}
	return allErrs
}

// SecretUpdate validates a secret update: type and, when immutable, data
// may not change.
func SecretUpdate(s, old *corev1.Secret) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&s.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, apimachineryvalidation.ValidateImmutableField(s.Type, old.Type, field.NewPath("type"))...)
	if old.Immutable != nil && *old.Immutable {
		if s.Immutable == nil || !*s.Immutable {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("immutable"), "field is immutable when `immutable` is set"))
		}
		if !reflect.DeepEqual(s.Data, old.Data) {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("data"), "field is immutable when `immutable` is set"))
		}
	}
	return append(allErrs, Secret(s)...)
}

// ConfigMapUpdate validates a config map update: when the old one is
// immutable, immutable, data and binaryData may not change.
func ConfigMapUpdate(cm, old *corev1.ConfigMap) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&cm.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	if old.Immutable != nil && *old.Immutable {
		if cm.Immutable == nil || !*cm.Immutable {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("immutable"), "field is immutable when `immutable` is set"))
		}
		if !reflect.DeepEqual(cm.Data, old.Data) {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("data"), "field is immutable when `immutable` is set"))
		}
		if !reflect.DeepEqual(cm.BinaryData, old.BinaryData) {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("binaryData"), "field is immutable when `immutable` is set"))
		}
	}
	return append(allErrs, ConfigMap(cm)...)
}

// ServiceAccount validates a service account.
func ServiceAccount(sa *corev1.ServiceAccount) field.ErrorList {
	return apimachineryvalidation.ValidateObjectMeta(&sa.ObjectMeta, true, apimachineryvalidation.ValidateServiceAccountName, field.NewPath("metadata"))
}

// ResourceQuota validates a resource quota (ValidateResourceQuota).
func ResourceQuota(q *corev1.ResourceQuota) field.ErrorList {
	allErrs := objectMetaNamespaced(&q.ObjectMeta)
	hardPath := field.NewPath("spec", "hard")
	for k, v := range q.Spec.Hard {
		p := hardPath.Key(string(k))
		allErrs = append(allErrs, resourceName(k, p)...)
		allErrs = append(allErrs, ResourceQuantityValue(k, v, p)...)
	}
	for k, v := range q.Status.Hard {
		p := field.NewPath("status", "hard").Key(string(k))
		allErrs = append(allErrs, resourceName(k, p)...)
		allErrs = append(allErrs, ResourceQuantityValue(k, v, p)...)
	}
	for k, v := range q.Status.Used {
		p := field.NewPath("status", "used").Key(string(k))
		allErrs = append(allErrs, resourceName(k, p)...)
		allErrs = append(allErrs, ResourceQuantityValue(k, v, p)...)
	}
	return allErrs
}

// LimitRange validates a limit range (ValidateLimitRange, Pod and Container
// items).
func LimitRange(lr *corev1.LimitRange) field.ErrorList {
	allErrs := objectMetaNamespaced(&lr.ObjectMeta)
	types := sets.New[corev1.LimitType]()
	for i, item := range lr.Spec.Limits {
		idx := field.NewPath("spec", "limits").Index(i)
		if types.Has(item.Type) {
			allErrs = append(allErrs, field.Duplicate(idx.Child("type"), item.Type))
		}
		types.Insert(item.Type)
		if item.Type == corev1.LimitTypePod {
			if len(item.Default) > 0 {
				allErrs = append(allErrs, field.Forbidden(idx.Child("default"), "may not be specified when `type` is 'Pod'"))
			}
			if len(item.DefaultRequest) > 0 {
				allErrs = append(allErrs, field.Forbidden(idx.Child("defaultRequest"), "may not be specified when `type` is 'Pod'"))
			}
		}
		for _, l := range []struct {
			name string
			list corev1.ResourceList
		}{{"max", item.Max}, {"min", item.Min}, {"default", item.Default}, {"defaultRequest", item.DefaultRequest}, {"maxLimitRequestRatio", item.MaxLimitRequestRatio}} {
			for k, v := range l.list {
				p := idx.Child(l.name).Key(string(k))
				allErrs = append(allErrs, resourceName(k, p)...)
				allErrs = append(allErrs, ResourceQuantityValue(k, v, p)...)
			}
		}
		keys := sets.New[corev1.ResourceName]()
		for _, l := range []corev1.ResourceList{item.Max, item.Min, item.Default, item.DefaultRequest} {
			for k := range l {
				keys.Insert(k)
			}
		}
		for _, k := range sets.List(keys) {
			minQ, hasMin := item.Min[k]
			maxQ, hasMax := item.Max[k]
			defQ, hasDef := item.Default[k]
			reqQ, hasReq := item.DefaultRequest[k]
			if hasMin && hasMax && minQ.Cmp(maxQ) > 0 {
				allErrs = append(allErrs, field.Invalid(idx.Child("min").Key(string(k)), minQ, fmt.Sprintf("min value %s is greater than max value %s", minQ.String(), maxQ.String())))
			}
			if hasReq && hasMin && minQ.Cmp(reqQ) > 0 {
				allErrs = append(allErrs, field.Invalid(idx.Child("defaultRequest").Key(string(k)), reqQ, fmt.Sprintf("min value %s is greater than default request value %s", minQ.String(), reqQ.String())))
			}
			if hasReq && hasMax && reqQ.Cmp(maxQ) > 0 {
				allErrs = append(allErrs, field.Invalid(idx.Child("defaultRequest").Key(string(k)), reqQ, fmt.Sprintf("default request value %s is greater than max value %s", reqQ.String(), maxQ.String())))
			}
			if hasReq && hasDef && reqQ.Cmp(defQ) > 0 {
				allErrs = append(allErrs, field.Invalid(idx.Child("defaultRequest").Key(string(k)), reqQ, fmt.Sprintf("default request value %s is greater than default limit value %s", reqQ.String(), defQ.String())))
			}
			if hasDef && hasMin && minQ.Cmp(defQ) > 0 {
				allErrs = append(allErrs, field.Invalid(idx.Child("default").Key(string(k)), minQ, fmt.Sprintf("min value %s is greater than default value %s", minQ.String(), defQ.String())))
			}
			if hasDef && hasMax && defQ.Cmp(maxQ) > 0 {
				allErrs = append(allErrs, field.Invalid(idx.Child("default").Key(string(k)), maxQ, fmt.Sprintf("default value %s is greater than max value %s", defQ.String(), maxQ.String())))
			}
		}
	}
	return allErrs
}

// Event validates a core/v1 event the way the legacy (v1) path does.
func Event(e *corev1.Event) field.ErrorList {
	allErrs := field.ErrorList{}
	nsPath := field.NewPath("involvedObject", "namespace")
	if e.EventTime.IsZero() {
		if len(e.InvolvedObject.Namespace) == 0 {
			if e.Namespace != metav1.NamespaceNone && e.Namespace != metav1.NamespaceDefault {
				allErrs = append(allErrs, field.Invalid(nsPath, e.InvolvedObject.Namespace, "does not match event.namespace"))
			}
		} else if e.Namespace != e.InvolvedObject.Namespace {
			allErrs = append(allErrs, field.Invalid(nsPath, e.InvolvedObject.Namespace, "does not match event.namespace"))
		}
	} else {
		if len(e.InvolvedObject.Namespace) == 0 && e.Namespace != metav1.NamespaceDefault && e.Namespace != metav1.NamespaceSystem {
			allErrs = append(allErrs, field.Invalid(nsPath, e.InvolvedObject.Namespace, "does not match event.namespace"))
		}
		if len(e.ReportingController) == 0 {
			allErrs = append(allErrs, field.Required(field.NewPath("reportingComponent"), ""))
		}
		if len(e.ReportingInstance) == 0 {
			allErrs = append(allErrs, field.Required(field.NewPath("reportingInstance"), ""))
		}
		if len(e.Action) == 0 {
			allErrs = append(allErrs, field.Required(field.NewPath("action"), ""))
		}
		if len(e.Reason) == 0 {
			allErrs = append(allErrs, field.Required(field.NewPath("reason"), ""))
		}
	}
	for _, msg := range validation.IsDNS1123Subdomain(e.Namespace) {
		allErrs = append(allErrs, field.Invalid(field.NewPath("namespace"), e.Namespace, msg))
	}
	return append(allErrs, objectMetaNamespaced(&e.ObjectMeta)...)
}

// Lease validates a lease (coordination ValidateLease).
func Lease(l *coordinationv1.Lease) field.ErrorList {
	allErrs := objectMetaNamespaced(&l.ObjectMeta)
	if l.Spec.LeaseDurationSeconds != nil && *l.Spec.LeaseDurationSeconds <= 0 {
		allErrs = append(allErrs, field.Invalid(field.NewPath("spec", "leaseDurationSeconds"), l.Spec.LeaseDurationSeconds, "must be greater than 0"))
	}
	if l.Spec.LeaseTransitions != nil && *l.Spec.LeaseTransitions < 0 {
		allErrs = append(allErrs, field.Invalid(field.NewPath("spec", "leaseTransitions"), l.Spec.LeaseTransitions, "must be greater than or equal to 0"))
	}
	return allErrs
}
