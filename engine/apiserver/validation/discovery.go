package validation

import (
	"net"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Upstream's limits on an EndpointSlice (pkg/apis/discovery/validation).
const (
	maxSliceEndpoints = 1000
	maxSliceAddresses = 100
	maxSlicePorts     = 20000
)

var supportedAddressTypes = []string{string(discoveryv1.AddressTypeFQDN), string(discoveryv1.AddressTypeIPv4), string(discoveryv1.AddressTypeIPv6)}

// EndpointSlice validates an EndpointSlice (ValidateEndpointSlice): address
// type, ports, and each endpoint's addresses, node name and hostname.
func EndpointSlice(s *discoveryv1.EndpointSlice) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&s.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	if s.AddressType == "" {
		allErrs = append(allErrs, field.Required(field.NewPath("addressType"), ""))
	} else if !sets.New(supportedAddressTypes...).Has(string(s.AddressType)) {
		allErrs = append(allErrs, field.NotSupported(field.NewPath("addressType"), s.AddressType, supportedAddressTypes))
	}
	allErrs = append(allErrs, slicePorts(s.Ports, field.NewPath("ports"))...)
	path := field.NewPath("endpoints")
	if len(s.Endpoints) > maxSliceEndpoints {
		return append(allErrs, field.TooMany(path, len(s.Endpoints), maxSliceEndpoints))
	}
	for i, ep := range s.Endpoints {
		idx := path.Index(i)
		addrPath := idx.Child("addresses")
		if len(ep.Addresses) == 0 {
			allErrs = append(allErrs, field.Required(addrPath, "must contain at least 1 address"))
		} else if len(ep.Addresses) > maxSliceAddresses {
			allErrs = append(allErrs, field.TooMany(addrPath, len(ep.Addresses), maxSliceAddresses))
		}
		for j, a := range ep.Addresses {
			switch s.AddressType {
			case discoveryv1.AddressTypeIPv4:
				if errs := validation.IsValidIPForLegacyField(addrPath.Index(j), a, true, nil); len(errs) > 0 {
					allErrs = append(allErrs, errs...)
				} else if net.ParseIP(a).To4() == nil {
					allErrs = append(allErrs, field.Invalid(addrPath, a, "must be an IPv4 address"))
				}
			case discoveryv1.AddressTypeIPv6:
				if ip := net.ParseIP(a); ip == nil || ip.To4() != nil {
					allErrs = append(allErrs, field.Invalid(addrPath, a, "must be an IPv6 address"))
				}
			case discoveryv1.AddressTypeFQDN:
				allErrs = append(allErrs, validation.IsFullyQualifiedDomainName(addrPath.Index(j), a)...)
			}
		}
		if ep.NodeName != nil {
			for _, msg := range validation.IsDNS1123Subdomain(*ep.NodeName) {
				allErrs = append(allErrs, field.Invalid(idx.Child("nodeName"), *ep.NodeName, msg))
			}
		}
		if ep.Hostname != nil {
			allErrs = append(allErrs, dns1123Label(*ep.Hostname, idx.Child("hostname"))...)
		}
	}
	return allErrs
}

func slicePorts(ports []discoveryv1.EndpointPort, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(ports) > maxSlicePorts {
		return field.ErrorList{field.TooMany(path, len(ports), maxSlicePorts)}
	}
	names := sets.Set[string]{}
	for i, p := range ports {
		idx := path.Index(i)
		if p.Name != nil && *p.Name != "" {
			allErrs = append(allErrs, dns1123Label(*p.Name, idx.Child("name"))...)
		}
		name := ""
		if p.Name != nil {
			name = *p.Name
		}
		if names.Has(name) {
			allErrs = append(allErrs, field.Duplicate(idx.Child("name"), name))
		}
		names.Insert(name)
		if p.Protocol == nil {
			allErrs = append(allErrs, field.Required(idx.Child("protocol"), ""))
		} else if !sets.New(supportedServiceProtocols...).Has(string(*p.Protocol)) {
			allErrs = append(allErrs, field.NotSupported(idx.Child("protocol"), *p.Protocol, supportedServiceProtocols))
		}
		if p.AppProtocol != nil {
			for _, msg := range validation.IsQualifiedName(*p.AppProtocol) {
				allErrs = append(allErrs, field.Invalid(idx.Child("appProtocol"), *p.AppProtocol, msg))
			}
		}
	}
	return allErrs
}

// Endpoints validates a v1 Endpoints object (ValidateEndpoints): each
// subset's addresses are IPs, its ports are named when there are several,
// in range, with a supported protocol.
func Endpoints(e *corev1.Endpoints) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&e.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	for i, ss := range e.Subsets {
		idx := field.NewPath("subsets").Index(i)
		if len(ss.Addresses) == 0 && len(ss.NotReadyAddresses) == 0 {
			allErrs = append(allErrs, field.Required(idx, "must specify `addresses` or `notReadyAddresses`"))
		}
		for j, a := range ss.Addresses {
			allErrs = append(allErrs, validation.IsValidIPForLegacyField(idx.Child("addresses").Index(j).Child("ip"), a.IP, true, nil)...)
		}
		for j, a := range ss.NotReadyAddresses {
			allErrs = append(allErrs, validation.IsValidIPForLegacyField(idx.Child("notReadyAddresses").Index(j).Child("ip"), a.IP, true, nil)...)
		}
		for j, p := range ss.Ports {
			pp := idx.Child("ports").Index(j)
			if len(ss.Ports) > 1 && p.Name == "" {
				allErrs = append(allErrs, field.Required(pp.Child("name"), ""))
			} else if p.Name != "" {
				allErrs = append(allErrs, dns1123Label(p.Name, pp.Child("name"))...)
			}
			for _, msg := range validation.IsValidPortNum(int(p.Port)) {
				allErrs = append(allErrs, field.Invalid(pp.Child("port"), p.Port, msg))
			}
			if p.Protocol == "" {
				allErrs = append(allErrs, field.Required(pp.Child("protocol"), ""))
			} else if !sets.New(supportedServiceProtocols...).Has(string(p.Protocol)) {
				allErrs = append(allErrs, field.NotSupported(pp.Child("protocol"), p.Protocol, supportedServiceProtocols))
			}
		}
	}
	return allErrs
}
