package servicealloc

import (
	"net"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// Prepare does what kube-apiserver's service storage does to a Service
// before validating it (storage.go's normalizeClusterIPs,
// patchAllocatedValues and dropTypeDependentFields, alloc.go's
// initIPFamilyFields), for this single-stack IPv4 cluster. old is nil on
// create. The errors are upstream's, returned before validation as upstream
// returns them.
func Prepare(svc, old *corev1.Service) field.ErrorList {
	if old != nil {
		patchAllocatedValues(svc, old)
	}
	normalizeClusterIPs(svc, old)
	if old != nil {
		dropTypeDependentFields(svc, old)
	}
	return initIPFamilyFields(svc, old)
}

// NeedsClusterIP reports whether svc gets a cluster IP (every type but ExternalName).
func NeedsClusterIP(svc *corev1.Service) bool { return svc.Spec.Type != corev1.ServiceTypeExternalName }

// NeedsNodePorts reports whether svc's ports get node ports.
func NeedsNodePorts(svc *corev1.Service) bool {
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort:
		return true
	case corev1.ServiceTypeLoadBalancer:
		return svc.Spec.AllocateLoadBalancerNodePorts == nil || *svc.Spec.AllocateLoadBalancerNodePorts
	}
	return false
}

// NeedsHealthCheck reports whether svc gets a health check node port: a
// LoadBalancer with externalTrafficPolicy Local.
func NeedsHealthCheck(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
}

func externallyAccessible(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer || svc.Spec.Type == corev1.ServiceTypeNodePort ||
		(svc.Spec.Type == corev1.ServiceTypeClusterIP && len(svc.Spec.ExternalIPs) > 0)
}

func normalizeClusterIPs(svc, old *corev1.Service) {
	if old == nil {
		if svc.Spec.ClusterIP != "" && len(svc.Spec.ClusterIPs) == 0 {
			svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
		}
		return
	}
	if len(old.Spec.ClusterIPs) > 0 && len(svc.Spec.ClusterIPs) == 0 && old.Spec.ClusterIP == svc.Spec.ClusterIP {
		svc.Spec.ClusterIPs = old.Spec.ClusterIPs
	}
	if svc.Spec.ClusterIP != old.Spec.ClusterIP && len(svc.Spec.ClusterIPs) > 0 &&
		slices.Equal(svc.Spec.ClusterIPs, old.Spec.ClusterIPs) {
		// the singular field changed alone (an old client): follow it
		if svc.Spec.ClusterIP == "" {
			svc.Spec.ClusterIPs = nil
		} else {
			svc.Spec.ClusterIPs = append([]string{svc.Spec.ClusterIP}, svc.Spec.ClusterIPs[1:]...)
		}
	}
}

// patchAllocatedValues keeps the cluster IP and node ports a PUT left out.
func patchAllocatedValues(svc, old *corev1.Service) {
	if NeedsClusterIP(old) && NeedsClusterIP(svc) {
		if svc.Spec.ClusterIP == "" {
			svc.Spec.ClusterIP = old.Spec.ClusterIP
		}
		if len(svc.Spec.ClusterIPs) == 0 && len(old.Spec.ClusterIPs) > 0 {
			svc.Spec.ClusterIPs = old.Spec.ClusterIPs
		}
	}
	if NeedsNodePorts(old) && NeedsNodePorts(svc) {
		inNew := map[int32]bool{}
		for _, p := range svc.Spec.Ports {
			if p.NodePort != 0 {
				inNew[p.NodePort] = true
			}
		}
		byName := map[string]int32{}
		for _, p := range old.Spec.Ports {
			byName[p.Name] = p.NodePort
		}
		for i := range svc.Spec.Ports {
			p := &svc.Spec.Ports[i]
			if p.NodePort == 0 && !inNew[byName[p.Name]] {
				p.NodePort = byName[p.Name]
			}
		}
	}
}

// dropTypeDependentFields clears what a type change makes meaningless, when
// the user did not change it.
func dropTypeDependentFields(svc, old *corev1.Service) {
	if NeedsClusterIP(old) && !NeedsClusterIP(svc) {
		if slices.Equal(svc.Spec.ClusterIPs, old.Spec.ClusterIPs) && svc.Spec.ClusterIP == old.Spec.ClusterIP {
			svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "", nil
		}
		if slices.Equal(svc.Spec.IPFamilies, old.Spec.IPFamilies) {
			svc.Spec.IPFamilies = nil
		}
		if ptr.Equal(svc.Spec.IPFamilyPolicy, old.Spec.IPFamilyPolicy) {
			svc.Spec.IPFamilyPolicy = nil
		}
	}
	if NeedsNodePorts(old) && !NeedsNodePorts(svc) {
		oldPorts := map[int32]bool{}
		for _, p := range old.Spec.Ports {
			oldPorts[p.NodePort] = true
		}
		for i := range svc.Spec.Ports {
			if oldPorts[svc.Spec.Ports[i].NodePort] {
				svc.Spec.Ports[i].NodePort = 0
			}
		}
	}
	if NeedsHealthCheck(old) && !NeedsHealthCheck(svc) && svc.Spec.HealthCheckNodePort == old.Spec.HealthCheckNodePort {
		svc.Spec.HealthCheckNodePort = 0
	}
	if externallyAccessible(old) && !externallyAccessible(svc) && svc.Spec.ExternalTrafficPolicy == old.Spec.ExternalTrafficPolicy {
		svc.Spec.ExternalTrafficPolicy = ""
	}
	if old.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.Type != corev1.ServiceTypeLoadBalancer &&
		ptr.Equal(svc.Spec.AllocateLoadBalancerNodePorts, old.Spec.AllocateLoadBalancerNodePorts) {
		svc.Spec.AllocateLoadBalancerNodePorts = nil
	}
}

// initIPFamilyFields fills ipFamilyPolicy and ipFamilies for a cluster whose
// only service family is IPv4.
func initIPFamilyFields(svc, old *corev1.Service) field.ErrorList {
	if !NeedsClusterIP(svc) {
		return nil
	}
	headlessNoSelector := svc.Spec.ClusterIP == corev1.ClusterIPNone && len(svc.Spec.Selector) == 0
	if svc.Spec.IPFamilyPolicy == nil {
		p := corev1.IPFamilyPolicySingleStack
		switch {
		case old != nil && old.Spec.IPFamilyPolicy != nil:
			p = *old.Spec.IPFamilyPolicy
		case headlessNoSelector:
			p = corev1.IPFamilyPolicyRequireDualStack
		}
		svc.Spec.IPFamilyPolicy = &p
	}
	var errs field.ErrorList
	for i, s := range svc.Spec.ClusterIPs {
		if s == corev1.ClusterIPNone {
			break
		}
		ip := net.ParseIP(s)
		if ip == nil || i < len(svc.Spec.IPFamilies) {
			continue
		}
		if ip.To4() == nil {
			errs = append(errs, field.Invalid(field.NewPath("spec", "clusterIPs").Index(i), svc.Spec.ClusterIPs,
				"IPv6 is not configured on this cluster"))
		} else {
			svc.Spec.IPFamilies = append(svc.Spec.IPFamilies, corev1.IPv4Protocol)
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if headlessNoSelector {
		if len(svc.Spec.IPFamilies) == 0 {
			svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
		}
		if len(svc.Spec.IPFamilies) < 2 && *svc.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack {
			alt := corev1.IPv6Protocol
			if svc.Spec.IPFamilies[0] == corev1.IPv6Protocol {
				alt = corev1.IPv4Protocol
			}
			svc.Spec.IPFamilies = append(svc.Spec.IPFamilies, alt)
		}
		return nil
	}
	if *svc.Spec.IPFamilyPolicy == corev1.IPFamilyPolicyRequireDualStack {
		errs = append(errs, field.Invalid(field.NewPath("spec", "ipFamilyPolicy"), svc.Spec.IPFamilyPolicy,
			"this cluster is not configured for dual-stack services"))
	}
	for i, f := range svc.Spec.IPFamilies {
		if f != corev1.IPv4Protocol {
			errs = append(errs, field.Invalid(field.NewPath("spec", "ipFamilies").Index(i), f, "not configured on this cluster"))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if len(svc.Spec.IPFamilies) == 0 {
		svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	}
	return nil
}
