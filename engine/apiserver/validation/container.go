package validation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	isNegativeErrorMsg    = `must be greater than or equal to 0`
	isNotIntegerErrorMsg  = `must be an integer`
	isNotPositiveErrorMsg = `must be greater than zero`
)

func containers(cs []corev1.Container, vols sets.Set[string], fldPath *field.Path) field.ErrorList {
	if len(cs) == 0 {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	allErrs := field.ErrorList{}
	names := sets.New[string]()
	for i := range cs {
		c := &cs[i]
		idx := fldPath.Index(i)
		allErrs = append(allErrs, containerCommon(c, vols, idx)...)
		if names.Has(c.Name) {
			allErrs = append(allErrs, field.Duplicate(idx.Child("name"), c.Name))
		} else {
			names.Insert(c.Name)
		}
		allErrs = append(allErrs, probe(c.LivenessProbe, idx.Child("livenessProbe"))...)
		allErrs = append(allErrs, probe(c.ReadinessProbe, idx.Child("readinessProbe"))...)
		allErrs = append(allErrs, probe(c.StartupProbe, idx.Child("startupProbe"))...)
		if c.LivenessProbe != nil && c.LivenessProbe.SuccessThreshold != 1 {
			allErrs = append(allErrs, field.Invalid(idx.Child("livenessProbe", "successThreshold"), c.LivenessProbe.SuccessThreshold, "must be 1"))
		}
		if c.StartupProbe != nil && c.StartupProbe.SuccessThreshold != 1 {
			allErrs = append(allErrs, field.Invalid(idx.Child("startupProbe", "successThreshold"), c.StartupProbe.SuccessThreshold, "must be 1"))
		}
		if c.RestartPolicy != nil {
			allErrs = append(allErrs, field.Forbidden(idx.Child("restartPolicy"), "may not be set for non-init containers"))
		}
	}
	return allErrs
}

func initContainers(ics, cs []corev1.Container, vols sets.Set[string], fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	names := sets.New[string]()
	for _, c := range cs {
		names.Insert(c.Name)
	}
	for i := range ics {
		c := &ics[i]
		idx := fldPath.Index(i)
		allErrs = append(allErrs, containerCommon(c, vols, idx)...)
		if names.Has(c.Name) {
			allErrs = append(allErrs, field.Duplicate(idx.Child("name"), c.Name))
		} else if len(c.Name) > 0 {
			names.Insert(c.Name)
		}
		sidecar := c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		if !sidecar {
			if c.Lifecycle != nil {
				allErrs = append(allErrs, field.Forbidden(idx.Child("lifecycle"), "may not be set for init containers without restartPolicy=Always"))
			}
			if c.LivenessProbe != nil {
				allErrs = append(allErrs, field.Forbidden(idx.Child("livenessProbe"), "may not be set for init containers without restartPolicy=Always"))
			}
			if c.ReadinessProbe != nil {
				allErrs = append(allErrs, field.Forbidden(idx.Child("readinessProbe"), "may not be set for init containers"))
			}
			if c.StartupProbe != nil {
				allErrs = append(allErrs, field.Forbidden(idx.Child("startupProbe"), "may not be set for init containers without restartPolicy=Always"))
			}
		}
	}
	return allErrs
}

func containerCommon(c *corev1.Container, vols sets.Set[string], path *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	namePath := path.Child("name")
	if len(c.Name) == 0 {
		allErrs = append(allErrs, field.Required(namePath, ""))
	} else {
		allErrs = append(allErrs, dns1123Label(c.Name, namePath)...)
	}
	if len(c.Image) == 0 {
		allErrs = append(allErrs, field.Required(path.Child("image"), ""))
	}
	switch c.TerminationMessagePolicy {
	case corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError:
	case "":
		allErrs = append(allErrs, field.Required(path.Child("terminationMessagePolicy"), ""))
	default:
		allErrs = append(allErrs, field.NotSupported(path.Child("terminationMessagePolicy"), c.TerminationMessagePolicy,
			[]corev1.TerminationMessagePolicy{corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError}))
	}
	allErrs = append(allErrs, containerPorts(c.Ports, path.Child("ports"))...)
	allErrs = append(allErrs, env(c.Env, path.Child("env"))...)
	allErrs = append(allErrs, volumeMounts(c.VolumeMounts, vols, path.Child("volumeMounts"))...)
	switch c.ImagePullPolicy {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	case "":
		allErrs = append(allErrs, field.Required(path.Child("imagePullPolicy"), ""))
	default:
		allErrs = append(allErrs, field.NotSupported(path.Child("imagePullPolicy"), c.ImagePullPolicy,
			[]corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}))
	}
	allErrs = append(allErrs, resourceRequirements(&c.Resources, path.Child("resources"))...)
	return allErrs
}

var supportedPortProtocols = []corev1.Protocol{corev1.ProtocolSCTP, corev1.ProtocolTCP, corev1.ProtocolUDP}

func containerPorts(ports []corev1.ContainerPort, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	names := sets.New[string]()
	for i, p := range ports {
		idx := fldPath.Index(i)
		if len(p.Name) > 0 {
			if msgs := validation.IsValidPortName(p.Name); len(msgs) != 0 {
				for _, msg := range msgs {
					allErrs = append(allErrs, field.Invalid(idx.Child("name"), p.Name, msg))
				}
			} else if names.Has(p.Name) {
				allErrs = append(allErrs, field.Duplicate(idx.Child("name"), p.Name))
			} else {
				names.Insert(p.Name)
			}
		}
		if p.ContainerPort == 0 {
			allErrs = append(allErrs, field.Required(idx.Child("containerPort"), ""))
		} else {
			for _, msg := range validation.IsValidPortNum(int(p.ContainerPort)) {
				allErrs = append(allErrs, field.Invalid(idx.Child("containerPort"), p.ContainerPort, msg))
			}
		}
		if p.HostPort != 0 {
			for _, msg := range validation.IsValidPortNum(int(p.HostPort)) {
				allErrs = append(allErrs, field.Invalid(idx.Child("hostPort"), p.HostPort, msg))
			}
		}
		switch p.Protocol {
		case "":
			allErrs = append(allErrs, field.Required(idx.Child("protocol"), ""))
		case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		default:
			allErrs = append(allErrs, field.NotSupported(idx.Child("protocol"), p.Protocol, supportedPortProtocols))
		}
	}
	return allErrs
}

func env(vars []corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	for i, ev := range vars {
		idx := fldPath.Index(i)
		if len(ev.Name) == 0 {
			allErrs = append(allErrs, field.Required(idx.Child("name"), ""))
			continue
		}
		for _, msg := range validation.IsRelaxedEnvVarName(ev.Name) {
			allErrs = append(allErrs, field.Invalid(idx.Child("name"), ev.Name, msg))
		}
		if ev.ValueFrom != nil && len(ev.Value) != 0 {
			allErrs = append(allErrs, field.Invalid(idx.Child("valueFrom"), "", "may not be specified when `value` is not empty"))
		}
	}
	return allErrs
}

func volumeMounts(mounts []corev1.VolumeMount, vols sets.Set[string], fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	paths := sets.New[string]()
	for i, m := range mounts {
		idx := fldPath.Index(i)
		if len(m.Name) == 0 {
			allErrs = append(allErrs, field.Required(idx.Child("name"), ""))
		}
		if !vols.Has(m.Name) {
			allErrs = append(allErrs, field.NotFound(idx.Child("name"), m.Name))
		}
		if len(m.MountPath) == 0 {
			allErrs = append(allErrs, field.Required(idx.Child("mountPath"), ""))
		}
		if paths.Has(m.MountPath) {
			allErrs = append(allErrs, field.Invalid(idx.Child("mountPath"), m.MountPath, "must be unique"))
		}
		paths.Insert(m.MountPath)
	}
	return allErrs
}

func probe(p *corev1.Probe, fldPath *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	allErrs := field.ErrorList{}
	n := 0
	for _, h := range []struct {
		name string
		on   bool
	}{{"exec", p.Exec != nil}, {"httpGet", p.HTTPGet != nil}, {"tcpSocket", p.TCPSocket != nil}, {"grpc", p.GRPC != nil}} {
		if !h.on {
			continue
		}
		if n > 0 {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child(h.name), "may not specify more than 1 handler type"))
		}
		n++
	}
	if n == 0 {
		allErrs = append(allErrs, field.Required(fldPath, "must specify a handler type"))
	}
	if p.Exec != nil && len(p.Exec.Command) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("exec", "command"), ""))
	}
	for _, f := range []struct {
		name string
		v    int32
	}{
		{"initialDelaySeconds", p.InitialDelaySeconds}, {"timeoutSeconds", p.TimeoutSeconds}, {"periodSeconds", p.PeriodSeconds},
		{"successThreshold", p.SuccessThreshold}, {"failureThreshold", p.FailureThreshold},
	} {
		if f.v < 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child(f.name), int64(f.v), isNegativeErrorMsg))
		}
	}
	return allErrs
}

// resourceRequirements is validateResourceRequirements for containers.
func resourceRequirements(r *corev1.ResourceRequirements, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	limPath := fldPath.Child("limits")
	reqPath := fldPath.Child("requests")
	for name, q := range r.Limits {
		p := limPath.Key(string(name))
		allErrs = append(allErrs, containerResourceName(name, p)...)
		allErrs = append(allErrs, ResourceQuantityValue(name, q, p)...)
	}
	for name, q := range r.Requests {
		p := reqPath.Key(string(name))
		allErrs = append(allErrs, containerResourceName(name, p)...)
		allErrs = append(allErrs, ResourceQuantityValue(name, q, p)...)
		if lim, ok := r.Limits[name]; ok {
			if q.Cmp(lim) != 0 && !isOvercommitAllowed(name) {
				allErrs = append(allErrs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, lim.String())))
			} else if q.Cmp(lim) > 0 {
				allErrs = append(allErrs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, lim.String())))
			}
		} else if !isOvercommitAllowed(name) {
			allErrs = append(allErrs, field.Required(limPath, "Limit must be set for non overcommitable resources"))
		}
	}
	return allErrs
}

// ResourceQuantityValue is upstream's ValidateResourceQuantityValue:
// non-negative, and whole for integer resources.
func ResourceQuantityValue(name corev1.ResourceName, q resource.Quantity, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if q.Cmp(resource.Quantity{}) < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath, q.String(), isNegativeErrorMsg))
	}
	if isIntegerResourceName(name) && q.MilliValue()%1000 != 0 {
		allErrs = append(allErrs, field.Invalid(fldPath, q, isNotIntegerErrorMsg))
	}
	return allErrs
}

func resourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	for _, msg := range validation.IsQualifiedName(string(name)) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, msg))
	}
	if len(allErrs) != 0 {
		return allErrs
	}
	if !strings.Contains(string(name), "/") && !isStandardResourceName(name) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, "must be a standard resource type or fully qualified"))
	}
	return allErrs
}

func containerResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	allErrs := resourceName(name, fldPath)
	if !strings.Contains(string(name), "/") {
		if !isStandardContainerResourceName(name) {
			return append(allErrs, field.Invalid(fldPath, name, "must be a standard resource for containers"))
		}
	} else if !isNativeResource(name) && !isExtendedResourceName(name) {
		return append(allErrs, field.Invalid(fldPath, name, "doesn't follow extended resource name standard"))
	}
	return allErrs
}

var standardContainerResources = sets.New[corev1.ResourceName](corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage)

func isHugePages(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

func isStandardContainerResourceName(name corev1.ResourceName) bool {
	return standardContainerResources.Has(name) || isHugePages(name)
}

var standardResources = sets.New[corev1.ResourceName](
	corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsEphemeralStorage,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage,
	corev1.ResourcePods, corev1.ResourceQuotas, corev1.ResourceServices, corev1.ResourceReplicationControllers,
	corev1.ResourceSecrets, corev1.ResourcePersistentVolumeClaims, corev1.ResourceConfigMaps,
	corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers, corev1.ResourceRequestsStorage,
)

func isStandardResourceName(name corev1.ResourceName) bool {
	return standardResources.Has(name) || isHugePages(name) || strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix+corev1.ResourceHugePagesPrefix)
}

func isNativeResource(name corev1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), corev1.ResourceDefaultNamespacePrefix)
}

func isExtendedResourceName(name corev1.ResourceName) bool {
	if isNativeResource(name) || strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+string(name))) == 0
}

var integerResources = sets.New[corev1.ResourceName](
	corev1.ResourcePods, corev1.ResourceQuotas, corev1.ResourceServices, corev1.ResourceReplicationControllers,
	corev1.ResourceSecrets, corev1.ResourceConfigMaps, corev1.ResourcePersistentVolumeClaims,
	corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers,
)

func isIntegerResourceName(name corev1.ResourceName) bool {
	return integerResources.Has(name) || isExtendedResourceName(name)
}

func isOvercommitAllowed(name corev1.ResourceName) bool {
	return isNativeResource(name) && !isHugePages(name)
}
