package validation

import (
	"fmt"
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// updatablePodSpecFields is the list upstream prints in the pod update
// Forbidden message (pkg/apis/core/validation, 1.36).
var updatablePodSpecFields = []string{
	"`spec.containers[*].image`",
	"`spec.initContainers[*].image`",
	"`spec.activeDeadlineSeconds`",
	"`spec.tolerations` (only additions to existing tolerations)",
	"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
}

// Pod validates a pod on create (ValidatePodCreate).
func Pod(pod *corev1.Pod) field.ErrorList {
	allErrs := podMetadataAndSpec(pod)
	if len(pod.Spec.EphemeralContainers) > 0 {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec", "ephemeralContainers"), "cannot be set on create"))
	}
	return allErrs
}

func podMetadataAndSpec(pod *corev1.Pod) field.ErrorList {
	metaPath := field.NewPath("metadata")
	specPath := field.NewPath("spec")
	allErrs := apimachineryvalidation.ValidateObjectMeta(&pod.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, metaPath)
	allErrs = append(allErrs, PodSpec(&pod.Spec, specPath)...)
	if pod.Spec.ServiceAccountName == "" {
		for vi, v := range pod.Spec.Volumes {
			if v.Projected == nil {
				continue
			}
			for si, s := range v.Projected.Sources {
				if s.ServiceAccountToken != nil {
					allErrs = append(allErrs, field.Forbidden(specPath.Child("volumes").Index(vi).Child("projected", "sources").Index(si).Child("serviceAccountToken"),
						"must not be specified when serviceAccountName is not set"))
				}
			}
		}
	}
	return allErrs
}

// PodUpdate validates an update of a pod (ValidatePodUpdate): only images,
// activeDeadlineSeconds, added tolerations and scheduling gate removals may
// change; anything else gives upstream's Forbidden message with a diff.
func PodUpdate(newPod, oldPod *corev1.Pod) field.ErrorList {
	metaPath := field.NewPath("metadata")
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&newPod.ObjectMeta, &oldPod.ObjectMeta, metaPath)
	allErrs = append(allErrs, podMetadataAndSpec(newPod)...)
	specPath := field.NewPath("spec")

	errs, stop := containerUpdates(newPod.Spec.Containers, oldPod.Spec.Containers, specPath.Child("containers"))
	allErrs = append(allErrs, errs...)
	if stop {
		return allErrs
	}
	errs, stop = containerUpdates(newPod.Spec.InitContainers, oldPod.Spec.InitContainers, specPath.Child("initContainers"))
	allErrs = append(allErrs, errs...)
	if stop {
		return allErrs
	}

	adsPath := specPath.Child("activeDeadlineSeconds")
	if newPod.Spec.ActiveDeadlineSeconds != nil {
		n := *newPod.Spec.ActiveDeadlineSeconds
		if n < 0 || n > math.MaxInt32 {
			return append(allErrs, field.Invalid(adsPath, n, validation.InclusiveRangeError(0, math.MaxInt32)))
		}
		if oldPod.Spec.ActiveDeadlineSeconds != nil && *oldPod.Spec.ActiveDeadlineSeconds < n {
			return append(allErrs, field.Invalid(adsPath, n, "must be less than or equal to previous value"))
		}
	} else if oldPod.Spec.ActiveDeadlineSeconds != nil {
		allErrs = append(allErrs, field.Invalid(adsPath, newPod.Spec.ActiveDeadlineSeconds, "must not update from a positive integer to nil value"))
	}

	allErrs = append(allErrs, onlyAddedTolerations(newPod.Spec.Tolerations, oldPod.Spec.Tolerations, specPath.Child("tolerations"))...)

	if apiequality.Semantic.DeepEqual(newPod.Spec, oldPod.Spec) {
		return allErrs
	}
	munged := *newPod.Spec.DeepCopy()
	for i := range munged.Containers {
		munged.Containers[i].Image = oldPod.Spec.Containers[i].Image
	}
	for i := range munged.InitContainers {
		munged.InitContainers[i].Image = oldPod.Spec.InitContainers[i].Image
	}
	munged.ActiveDeadlineSeconds = oldPod.Spec.ActiveDeadlineSeconds
	munged.SchedulingGates = oldPod.Spec.SchedulingGates
	munged.Tolerations = oldPod.Spec.Tolerations
	if g := oldPod.Spec.TerminationGracePeriodSeconds; g != nil && *g < 0 &&
		munged.TerminationGracePeriodSeconds != nil && *munged.TerminationGracePeriodSeconds == 1 {
		munged.TerminationGracePeriodSeconds = g
	}
	if !apiequality.Semantic.DeepEqual(munged, oldPod.Spec) {
		specDiff := diff.Diff(oldPod.Spec, munged)
		allErrs = append(allErrs, field.Forbidden(specPath, fmt.Sprintf("pod updates may not change fields other than %s\n%v", strings.Join(updatablePodSpecFields, ","), specDiff)))
	}
	return allErrs
}

func containerUpdates(newC, oldC []corev1.Container, fldPath *field.Path) (field.ErrorList, bool) {
	allErrs := field.ErrorList{}
	if len(newC) != len(oldC) {
		return append(allErrs, field.Forbidden(fldPath, "pod updates may not add or remove containers")), true
	}
	for i, c := range newC {
		if len(c.Image) == 0 {
			allErrs = append(allErrs, field.Required(fldPath.Index(i).Child("image"), ""))
		}
		if len(strings.TrimSpace(c.Image)) != len(c.Image) {
			allErrs = append(allErrs, field.Invalid(fldPath.Index(i).Child("image"), c.Image, "must not have leading or trailing whitespace"))
		}
	}
	return allErrs, false
}

func onlyAddedTolerations(newT, oldT []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	for _, old := range oldT {
		found := false
		oldCopy := old
		oldCopy.TolerationSeconds = nil
		for _, n := range newT {
			nCopy := n
			nCopy.TolerationSeconds = nil
			if apiequality.Semantic.DeepEqual(oldCopy, nCopy) {
				found = true
				break
			}
		}
		if !found {
			allErrs = append(allErrs, field.Forbidden(fldPath, "existing toleration can not be modified except its tolerationSeconds"))
			return allErrs
		}
	}
	return append(allErrs, tolerations(newT, fldPath)...)
}

// PodTemplateSpec validates a pod template (ValidatePodTemplateSpec).
func PodTemplateSpec(t *corev1.PodTemplateSpec, fldPath *field.Path) field.ErrorList {
	allErrs := metavalidation.ValidateLabels(t.Labels, fldPath.Child("labels"))
	allErrs = append(allErrs, apimachineryvalidation.ValidateAnnotations(t.Annotations, fldPath.Child("annotations"))...)
	allErrs = append(allErrs, PodSpec(&t.Spec, fldPath.Child("spec"))...)
	if len(t.Spec.EphemeralContainers) > 0 {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("spec", "ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return allErrs
}

// PodSpec validates a defaulted pod spec (the parts of ValidatePodSpec that
// podtrace's runtime can act on).
func PodSpec(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if spec.TerminationGracePeriodSeconds == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("terminationGracePeriodSeconds"), ""))
	}
	vols, vErrs := volumes(spec.Volumes, fldPath.Child("volumes"))
	allErrs = append(allErrs, vErrs...)
	allErrs = append(allErrs, containers(spec.Containers, vols, fldPath.Child("containers"))...)
	allErrs = append(allErrs, initContainers(spec.InitContainers, spec.Containers, vols, fldPath.Child("initContainers"))...)
	allErrs = append(allErrs, restartPolicy(spec.RestartPolicy, fldPath.Child("restartPolicy"))...)
	allErrs = append(allErrs, dnsPolicy(spec.DNSPolicy, fldPath.Child("dnsPolicy"))...)
	allErrs = append(allErrs, metavalidation.ValidateLabels(spec.NodeSelector, fldPath.Child("nodeSelector"))...)
	if len(spec.ServiceAccountName) > 0 {
		for _, msg := range apimachineryvalidation.ValidateServiceAccountName(spec.ServiceAccountName, false) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("serviceAccountName"), spec.ServiceAccountName, msg))
		}
	}
	if len(spec.NodeName) > 0 {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(spec.NodeName, false) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("nodeName"), spec.NodeName, msg))
		}
	}
	if spec.ActiveDeadlineSeconds != nil {
		v := *spec.ActiveDeadlineSeconds
		if v < 1 || v > math.MaxInt32 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("activeDeadlineSeconds"), v, validation.InclusiveRangeError(1, math.MaxInt32)))
		}
	}
	if len(spec.Hostname) > 0 {
		allErrs = append(allErrs, dns1123Label(spec.Hostname, fldPath.Child("hostname"))...)
	}
	if len(spec.Subdomain) > 0 {
		allErrs = append(allErrs, dns1123Label(spec.Subdomain, fldPath.Child("subdomain"))...)
	}
	if len(spec.Tolerations) > 0 {
		allErrs = append(allErrs, tolerations(spec.Tolerations, fldPath.Child("tolerations"))...)
	}
	if spec.PreemptionPolicy != nil {
		switch *spec.PreemptionPolicy {
		case corev1.PreemptLowerPriority, corev1.PreemptNever:
		case "":
			allErrs = append(allErrs, field.Required(fldPath.Child("preemptionPolicy"), ""))
		default:
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("preemptionPolicy"), spec.PreemptionPolicy,
				[]corev1.PreemptionPolicy{corev1.PreemptLowerPriority, corev1.PreemptNever}))
		}
	}
	for i, s := range spec.ImagePullSecrets {
		if s.Name == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("imagePullSecrets").Index(i).Child("name"), ""))
		}
	}
	return allErrs
}

func restartPolicy(p corev1.RestartPolicy, fldPath *field.Path) field.ErrorList {
	switch p {
	case corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever:
		return nil
	case "":
		return field.ErrorList{field.Required(fldPath, "")}
	default:
		return field.ErrorList{field.NotSupported(fldPath, p,
			[]corev1.RestartPolicy{corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever})}
	}
}

func dnsPolicy(p corev1.DNSPolicy, fldPath *field.Path) field.ErrorList {
	switch p {
	case corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone:
		return nil
	case "":
		return field.ErrorList{field.Required(fldPath, "")}
	default:
		return field.ErrorList{field.NotSupported(fldPath, &p,
			[]corev1.DNSPolicy{corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone})}
	}
}

func tolerations(ts []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	for i, t := range ts {
		idx := fldPath.Index(i)
		if len(t.Key) > 0 {
			allErrs = append(allErrs, metavalidation.ValidateLabelName(t.Key, idx.Child("key"))...)
		}
		if len(t.Key) == 0 && t.Operator != corev1.TolerationOpExists {
			allErrs = append(allErrs, field.Invalid(idx.Child("operator"), t.Operator,
				"operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			allErrs = append(allErrs, field.Invalid(idx.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
			if errs := validation.IsValidLabelValue(t.Value); len(errs) != 0 {
				allErrs = append(allErrs, field.Invalid(idx.Child("operator"), t.Value, strings.Join(errs, ";")))
			}
		case corev1.TolerationOpExists:
			if len(t.Value) > 0 {
				allErrs = append(allErrs, field.Invalid(idx.Child("operator"), t.Value, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			allErrs = append(allErrs, field.NotSupported(idx.Child("operator"), t.Operator,
				[]corev1.TolerationOperator{corev1.TolerationOpEqual, corev1.TolerationOpExists}))
		}
		if len(t.Effect) > 0 {
			allErrs = append(allErrs, taintEffect(t.Effect, true, idx.Child("effect"))...)
		}
	}
	return allErrs
}

func taintEffect(e corev1.TaintEffect, allowEmpty bool, fldPath *field.Path) field.ErrorList {
	if !allowEmpty && len(e) == 0 {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	switch e {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		return nil
	}
	return field.ErrorList{field.NotSupported(fldPath, e, []string{
		string(corev1.TaintEffectNoSchedule), string(corev1.TaintEffectPreferNoSchedule), string(corev1.TaintEffectNoExecute),
	})}
}

func volumes(vs []corev1.Volume, fldPath *field.Path) (sets.Set[string], field.ErrorList) {
	allErrs := field.ErrorList{}
	names := sets.New[string]()
	for i, v := range vs {
		idx := fldPath.Index(i)
		el := volumeSource(&v.VolumeSource, idx)
		if len(v.Name) == 0 {
			el = append(el, field.Required(idx.Child("name"), ""))
		} else {
			el = append(el, dns1123Label(v.Name, idx.Child("name"))...)
		}
		if names.Has(v.Name) {
			el = append(el, field.Duplicate(idx.Child("name"), v.Name))
		}
		if len(el) == 0 {
			names.Insert(v.Name)
		} else {
			allErrs = append(allErrs, el...)
		}
	}
	return names, allErrs
}

// volumeSource checks that exactly one source is set, naming the fields in
// upstream's order.
func volumeSource(s *corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	set := []struct {
		name string
		on   bool
	}{
		{"hostPath", s.HostPath != nil}, {"emptyDir", s.EmptyDir != nil}, {"gitRepo", s.GitRepo != nil},
		{"gcePersistentDisk", s.GCEPersistentDisk != nil}, {"awsElasticBlockStore", s.AWSElasticBlockStore != nil},
		{"secret", s.Secret != nil}, {"nfs", s.NFS != nil}, {"iscsi", s.ISCSI != nil}, {"glusterfs", s.Glusterfs != nil},
		{"persistentVolumeClaim", s.PersistentVolumeClaim != nil}, {"rbd", s.RBD != nil}, {"flexVolume", s.FlexVolume != nil},
		{"cinder", s.Cinder != nil}, {"cephfs", s.CephFS != nil}, {"flocker", s.Flocker != nil},
		{"downwardAPI", s.DownwardAPI != nil}, {"fc", s.FC != nil}, {"azureFile", s.AzureFile != nil},
		{"configMap", s.ConfigMap != nil}, {"vsphereVolume", s.VsphereVolume != nil}, {"quobyte", s.Quobyte != nil},
		{"azureDisk", s.AzureDisk != nil}, {"photonPersistentDisk", s.PhotonPersistentDisk != nil},
		{"projected", s.Projected != nil}, {"portworxVolume", s.PortworxVolume != nil}, {"scaleIO", s.ScaleIO != nil},
		{"storageos", s.StorageOS != nil}, {"csi", s.CSI != nil}, {"ephemeral", s.Ephemeral != nil}, {"image", s.Image != nil},
	}
	allErrs := field.ErrorList{}
	n := 0
	for _, v := range set {
		if !v.on {
			continue
		}
		if n > 0 {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child(v.name), "may not specify more than 1 volume type"))
		}
		n++
	}
	if n == 0 {
		allErrs = append(allErrs, field.Required(fldPath, "must specify a volume type"))
	}
	if s.HostPath != nil && len(s.HostPath.Path) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("hostPath", "path"), ""))
	}
	if s.Secret != nil && len(s.Secret.SecretName) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("secret", "secretName"), ""))
	}
	if s.ConfigMap != nil && len(s.ConfigMap.Name) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("configMap", "name"), ""))
	}
	if s.PersistentVolumeClaim != nil && len(s.PersistentVolumeClaim.ClaimName) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("persistentVolumeClaim", "claimName"), ""))
	}
	return allErrs
}

func dns1123Label(v string, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	for _, msg := range validation.IsDNS1123Label(v) {
		allErrs = append(allErrs, field.Invalid(fldPath, v, msg))
	}
	return allErrs
}

// objectMetaNamespaced validates metadata of a namespaced object whose name
// is a DNS-1123 subdomain.
func objectMetaNamespaced(m *metav1.ObjectMeta) field.ErrorList {
	return apimachineryvalidation.ValidateObjectMeta(m, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
}
