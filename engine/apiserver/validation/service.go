package validation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podtrace/podtrace/engine/apiserver/servicealloc"
)

// Upstream's supported values (pkg/apis/core/validation), as sorted lists.
var (
	supportedServiceTypes = []string{string(corev1.ServiceTypeClusterIP), string(corev1.ServiceTypeExternalName),
		string(corev1.ServiceTypeLoadBalancer), string(corev1.ServiceTypeNodePort)}
	supportedSessionAffinity  = []string{string(corev1.ServiceAffinityClientIP), string(corev1.ServiceAffinityNone)}
	supportedServiceProtocols = []string{string(corev1.ProtocolSCTP), string(corev1.ProtocolTCP), string(corev1.ProtocolUDP)}
	supportedTrafficPolicies  = []string{string(corev1.ServiceExternalTrafficPolicyCluster), string(corev1.ServiceExternalTrafficPolicyLocal)}
	supportedIPFamilyPolicies = []string{string(corev1.IPFamilyPolicyPreferDualStack), string(corev1.IPFamilyPolicyRequireDualStack),
		string(corev1.IPFamilyPolicySingleStack)}
)

// Service validates a new Service (ValidateServiceCreate, with
// RelaxedServiceNameValidation on as in 1.36: the name is a DNS-1123 label).
func Service(svc *corev1.Service) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&svc.ObjectMeta, true, apimachineryvalidation.NameIsDNSLabel, field.NewPath("metadata"))
	return append(allErrs, serviceSpec(svc, nil)...)
}

// ServiceUpdate validates an update (ValidateServiceUpdate): cluster IPs
// may not change once set, besides the create rules.
func ServiceUpdate(svc, old *corev1.Service) field.ErrorList {
	allErrs := metaUpdate(svc, old)
	allErrs = append(allErrs, clusterIPsUnchanged(old, svc)...)
	if servicealloc.NeedsHealthCheck(old) && servicealloc.NeedsHealthCheck(svc) && svc.Spec.HealthCheckNodePort != old.Spec.HealthCheckNodePort {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec", "healthCheckNodePort"), "field is immutable"))
	}
	return append(allErrs, serviceSpec(svc, old)...)
}

// clusterIPsUnchanged is validateUpgradeDowngradeClusterIPs for a
// single-stack cluster.
func clusterIPsUnchanged(old, svc *corev1.Service) field.ErrorList {
	var allErrs field.ErrorList
	if svc.Spec.Type == corev1.ServiceTypeExternalName || old.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	if isHeadless(old) && isHeadless(svc) {
		return nil
	}
	path := field.NewPath("spec", "clusterIPs")
	switch {
	case len(old.Spec.ClusterIPs) == len(svc.Spec.ClusterIPs):
		for i, ip := range old.Spec.ClusterIPs {
			if ip != svc.Spec.ClusterIPs[i] {
				allErrs = append(allErrs, field.Invalid(path.Index(i), svc.Spec.ClusterIPs, "may not change once set"))
			}
		}
	case len(old.Spec.ClusterIPs) > len(svc.Spec.ClusterIPs):
		if len(svc.Spec.ClusterIPs) == 0 {
			allErrs = append(allErrs, field.Invalid(path.Index(0), svc.Spec.ClusterIPs, "primary clusterIP can not be unset"))
		} else if svc.Spec.ClusterIPs[0] != old.Spec.ClusterIPs[0] {
			allErrs = append(allErrs, field.Invalid(path.Index(0), svc.Spec.ClusterIPs, "may not change once set"))
		}
	default:
		if len(old.Spec.ClusterIPs) > 0 && svc.Spec.ClusterIPs[0] != old.Spec.ClusterIPs[0] {
			allErrs = append(allErrs, field.Invalid(path.Index(0), svc.Spec.ClusterIPs, "may not change once set"))
		}
	}
	return allErrs
}

func isHeadless(svc *corev1.Service) bool {
	return len(svc.Spec.ClusterIPs) == 1 && svc.Spec.ClusterIPs[0] == corev1.ClusterIPNone
}

// serviceSpec is upstream's validateService.
func serviceSpec(svc *corev1.Service, old *corev1.Service) field.ErrorList {
	var allErrs field.ErrorList
	spec := &svc.Spec
	specPath := field.NewPath("spec")
	if len(spec.Ports) == 0 && !isHeadless(svc) && spec.Type != corev1.ServiceTypeExternalName {
		allErrs = append(allErrs, field.Required(specPath.Child("ports"), ""))
	}
	switch spec.Type {
	case corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort:
		if isHeadless(svc) {
			allErrs = append(allErrs, field.Invalid(specPath.Child("clusterIPs").Index(0), spec.ClusterIPs[0],
				fmt.Sprintf("may not be set to 'None' for %s services", spec.Type)))
		}
	case corev1.ServiceTypeExternalName:
		if len(spec.ClusterIPs) > 0 {
			allErrs = append(allErrs, field.Forbidden(specPath.Child("clusterIPs"), "may not be set for ExternalName services"))
		}
		if len(spec.IPFamilies) > 0 {
			allErrs = append(allErrs, field.Forbidden(specPath.Child("ipFamilies"), "may not be set for ExternalName services"))
		}
		if spec.IPFamilyPolicy != nil {
			allErrs = append(allErrs, field.Forbidden(specPath.Child("ipFamilyPolicy"), "may not be set for ExternalName services"))
		}
		if cname := strings.TrimSuffix(spec.ExternalName, "."); cname != "" {
			for _, msg := range validation.IsDNS1123Subdomain(cname) {
				allErrs = append(allErrs, field.Invalid(specPath.Child("externalName"), cname, msg))
			}
		} else {
			allErrs = append(allErrs, field.Required(specPath.Child("externalName"), ""))
		}
	}
	names := sets.Set[string]{}
	for i := range spec.Ports {
		allErrs = append(allErrs, servicePort(&spec.Ports[i], len(spec.Ports) > 1, names, specPath.Child("ports").Index(i))...)
	}
	if spec.Selector != nil {
		allErrs = append(allErrs, metavalidation.ValidateLabels(spec.Selector, specPath.Child("selector"))...)
	}
	switch spec.SessionAffinity {
	case "":
		allErrs = append(allErrs, field.Required(specPath.Child("sessionAffinity"), ""))
	case corev1.ServiceAffinityNone:
		if spec.SessionAffinityConfig != nil {
			allErrs = append(allErrs, field.Forbidden(specPath.Child("sessionAffinityConfig"), "must not be set when session affinity is None"))
		}
	case corev1.ServiceAffinityClientIP:
	default:
		allErrs = append(allErrs, field.NotSupported(specPath.Child("sessionAffinity"), spec.SessionAffinity, supportedSessionAffinity))
	}
	allErrs = append(allErrs, clusterIPsRelatedFields(svc, old)...)
	for i, ip := range spec.ExternalIPs {
		var oldIPs []string
		if old != nil {
			oldIPs = old.Spec.ExternalIPs
		}
		allErrs = append(allErrs, validation.IsValidIPForLegacyField(specPath.Child("externalIPs").Index(i), ip, true, oldIPs)...)
	}
	if spec.Type == "" {
		allErrs = append(allErrs, field.Required(specPath.Child("type"), ""))
	} else if !sets.New(supportedServiceTypes...).Has(string(spec.Type)) {
		allErrs = append(allErrs, field.NotSupported(specPath.Child("type"), spec.Type, supportedServiceTypes))
	}
	allErrs = append(allErrs, nodePortsAndDuplicates(svc)...)
	if spec.AllocateLoadBalancerNodePorts != nil && spec.Type != corev1.ServiceTypeLoadBalancer {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("allocateLoadBalancerNodePorts"), "may only be used when `type` is 'LoadBalancer'"))
	}
	if spec.Type == corev1.ServiceTypeLoadBalancer && spec.AllocateLoadBalancerNodePorts == nil {
		allErrs = append(allErrs, field.Required(field.NewPath("allocateLoadBalancerNodePorts"), ""))
	}
	return append(allErrs, trafficPolicies(svc)...)
}

func servicePort(sp *corev1.ServicePort, requireName bool, names sets.Set[string], path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if requireName && sp.Name == "" {
		allErrs = append(allErrs, field.Required(path.Child("name"), ""))
	} else if sp.Name != "" {
		allErrs = append(allErrs, dns1123Label(sp.Name, path.Child("name"))...)
		if names.Has(sp.Name) {
			allErrs = append(allErrs, field.Duplicate(path.Child("name"), sp.Name))
		} else {
			names.Insert(sp.Name)
		}
	}
	for _, msg := range validation.IsValidPortNum(int(sp.Port)) {
		allErrs = append(allErrs, field.Invalid(path.Child("port"), sp.Port, msg))
	}
	if sp.Protocol == "" {
		allErrs = append(allErrs, field.Required(path.Child("protocol"), ""))
	} else if !sets.New(supportedServiceProtocols...).Has(string(sp.Protocol)) {
		allErrs = append(allErrs, field.NotSupported(path.Child("protocol"), sp.Protocol, supportedServiceProtocols))
	}
	allErrs = append(allErrs, portNumOrName(sp.TargetPort, path.Child("targetPort"))...)
	if sp.AppProtocol != nil {
		for _, msg := range validation.IsQualifiedName(*sp.AppProtocol) {
			allErrs = append(allErrs, field.Invalid(path.Child("appProtocol"), *sp.AppProtocol, msg))
		}
	}
	return allErrs
}

// portNumOrName is ValidatePortNumOrName.
func portNumOrName(port intstr.IntOrString, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if port.Type == intstr.Int {
		for _, msg := range validation.IsValidPortNum(port.IntValue()) {
			allErrs = append(allErrs, field.Invalid(path, port.IntValue(), msg))
		}
	} else {
		for _, msg := range validation.IsValidPortName(port.StrVal) {
			allErrs = append(allErrs, field.Invalid(path, port.StrVal, msg))
		}
	}
	return allErrs
}

// nodePortsAndDuplicates checks node ports on ClusterIP services and
// duplicate node ports and ports by protocol.
func nodePortsAndDuplicates(svc *corev1.Service) field.ErrorList {
	var allErrs field.ErrorList
	portsPath := field.NewPath("spec", "ports")
	if svc.Spec.Type == corev1.ServiceTypeClusterIP {
		for i := range svc.Spec.Ports {
			if svc.Spec.Ports[i].NodePort != 0 {
				allErrs = append(allErrs, field.Forbidden(portsPath.Index(i).Child("nodePort"), "may not be used when `type` is 'ClusterIP'"))
			}
		}
	}
	nodePorts := map[string]bool{}
	for i, p := range svc.Spec.Ports {
		if p.NodePort == 0 {
			continue
		}
		key := fmt.Sprintf("%s/%d", p.Protocol, p.NodePort)
		if nodePorts[key] {
			allErrs = append(allErrs, field.Duplicate(portsPath.Index(i).Child("nodePort"), p.NodePort))
		}
		nodePorts[key] = true
	}
	ports := map[portKey]bool{}
	for i, p := range svc.Spec.Ports {
		key := portKey{Protocol: p.Protocol, Port: p.Port}
		if ports[key] {
			allErrs = append(allErrs, field.Duplicate(portsPath.Index(i), key))
		}
		ports[key] = true
	}
	return allErrs
}

// portKey is the (protocol, port) pair upstream compares ports by. Upstream
// reports a duplicate with the internal core.ServicePort value, which the
// field error prints with %#v; String reproduces that text.
type portKey struct {
	Protocol corev1.Protocol
	Port     int32
}

// String prints the key as upstream's error shows its core.ServicePort.
func (k portKey) String() string {
	return fmt.Sprintf(`core.ServicePort{Name:"", Protocol:%q, AppProtocol:(*string)(nil), Port:%d, `+
		`TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:""}, NodePort:0}`, string(k.Protocol), k.Port)
}

// MarshalJSON fails, as it does for upstream's internal types, so the field
// error falls back to String.
func (k portKey) MarshalJSON() ([]byte, error) {
	return nil, fmt.Errorf("internal type")
}

func trafficPolicies(svc *corev1.Service) field.ErrorList {
	var allErrs field.ErrorList
	spec := &svc.Spec
	specPath := field.NewPath("spec")
	external := spec.Type == corev1.ServiceTypeLoadBalancer || spec.Type == corev1.ServiceTypeNodePort ||
		(spec.Type == corev1.ServiceTypeClusterIP && len(spec.ExternalIPs) > 0)
	switch {
	case !external && spec.ExternalTrafficPolicy != "":
		allErrs = append(allErrs, field.Invalid(specPath.Child("externalTrafficPolicy"), spec.ExternalTrafficPolicy,
			"may only be set for externally-accessible services"))
	case external && spec.ExternalTrafficPolicy == "":
		allErrs = append(allErrs, field.Required(specPath.Child("externalTrafficPolicy"), ""))
	case external && !sets.New(supportedTrafficPolicies...).Has(string(spec.ExternalTrafficPolicy)):
		allErrs = append(allErrs, field.NotSupported(specPath.Child("externalTrafficPolicy"), spec.ExternalTrafficPolicy, supportedTrafficPolicies))
	}
	needsHealthCheck := spec.Type == corev1.ServiceTypeLoadBalancer && spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
	switch {
	case !needsHealthCheck && spec.HealthCheckNodePort != 0:
		allErrs = append(allErrs, field.Invalid(specPath.Child("healthCheckNodePort"), spec.HealthCheckNodePort,
			"may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"))
	case needsHealthCheck && spec.HealthCheckNodePort == 0:
		allErrs = append(allErrs, field.Required(specPath.Child("healthCheckNodePort"), ""))
	case needsHealthCheck:
		for _, msg := range validation.IsValidPortNum(int(spec.HealthCheckNodePort)) {
			allErrs = append(allErrs, field.Invalid(specPath.Child("healthCheckNodePort"), spec.HealthCheckNodePort, msg))
		}
	}
	if spec.InternalTrafficPolicy == nil {
		if spec.Type == corev1.ServiceTypeNodePort || spec.Type == corev1.ServiceTypeLoadBalancer || spec.Type == corev1.ServiceTypeClusterIP {
			allErrs = append(allErrs, field.Required(specPath.Child("internalTrafficPolicy"), ""))
		}
	} else if p := *spec.InternalTrafficPolicy; p != corev1.ServiceInternalTrafficPolicyCluster && p != corev1.ServiceInternalTrafficPolicyLocal {
		allErrs = append(allErrs, field.NotSupported(specPath.Child("internalTrafficPolicy"), p,
			[]string{string(corev1.ServiceInternalTrafficPolicyCluster), string(corev1.ServiceInternalTrafficPolicyLocal)}))
	}
	return allErrs
}

// clusterIPsRelatedFields is ValidateServiceClusterIPsRelatedFields.
func clusterIPsRelatedFields(svc, old *corev1.Service) field.ErrorList {
	spec := &svc.Spec
	if spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	var allErrs field.ErrorList
	path := field.NewPath("spec", "clusterIPs")
	if spec.ClusterIP != "" {
		if len(spec.ClusterIPs) == 0 {
			allErrs = append(allErrs, field.Required(path, ""))
		} else if spec.ClusterIPs[0] != spec.ClusterIP {
			allErrs = append(allErrs, field.Invalid(path, spec.ClusterIPs, "first value must match `clusterIP`"))
		}
	} else if len(spec.ClusterIPs) != 0 {
		allErrs = append(allErrs, field.Invalid(path, spec.ClusterIPs, "must be empty when `clusterIP` is not specified"))
	}
	familiesPath := field.NewPath("spec", "ipFamilies")
	seen := map[corev1.IPFamily]bool{}
	for i, f := range spec.IPFamilies {
		if f != corev1.IPv4Protocol && f != corev1.IPv6Protocol {
			allErrs = append(allErrs, field.NotSupported(familiesPath.Index(i), f, []string{string(corev1.IPv4Protocol), string(corev1.IPv6Protocol)}))
		}
		if seen[f] {
			allErrs = append(allErrs, field.Duplicate(familiesPath.Index(i), f))
		}
		seen[f] = true
	}
	if p := spec.IPFamilyPolicy; p != nil && !sets.New(supportedIPFamilyPolicies...).Has(string(*p)) {
		allErrs = append(allErrs, field.NotSupported(field.NewPath("spec", "ipFamilyPolicy"), p, supportedIPFamilyPolicies))
	}
	var oldIPs []string
	if old != nil {
		oldIPs = old.Spec.ClusterIPs
	}
	for i, ip := range spec.ClusterIPs {
		if i == 0 && ip == corev1.ClusterIPNone {
			if len(spec.ClusterIPs) > 1 {
				allErrs = append(allErrs, field.Invalid(path, spec.ClusterIPs, "'None' must be the first and only value"))
			}
			continue
		}
		allErrs = append(allErrs, validation.IsValidIPForLegacyField(path.Index(i), ip, true, oldIPs)...)
	}
	if len(spec.ClusterIPs) > 2 {
		allErrs = append(allErrs, field.Invalid(path, spec.ClusterIPs, "may only hold up to 2 values"))
	}
	return allErrs
}
