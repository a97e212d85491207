package apiserver

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// Service and EndpointSlice columns, as kube-apiserver 1.36's printers
// (printService, printEndpointSlice) make them; the API server prints wide.
func init() {
	printers["Service"] = printer{columns: []metav1.TableColumnDefinition{colName,
		{Name: "Type", Type: "string", Description: corev1.ServiceSpec{}.SwaggerDoc()["type"]},
		{Name: "Cluster-IP", Type: "string", Description: corev1.ServiceSpec{}.SwaggerDoc()["clusterIP"]},
		{Name: "External-IP", Type: "string", Description: corev1.ServiceSpec{}.SwaggerDoc()["externalIPs"]},
		{Name: "Port(s)", Type: "string", Description: corev1.ServiceSpec{}.SwaggerDoc()["ports"]},
		colAge,
		{Name: "Selector", Type: "string", Priority: 1, Description: corev1.ServiceSpec{}.SwaggerDoc()["selector"]},
	}, row: func(o runtime.Object, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return serviceRow(o.(*corev1.Service), now), nil
	}}
	printers["Endpoints"] = printer{columns: []metav1.TableColumnDefinition{colName,
		{Name: "Endpoints", Type: "string", Description: corev1.Endpoints{}.SwaggerDoc()["subsets"]},
		colAge,
	}, row: func(o runtime.Object, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		e := o.(*corev1.Endpoints)
		return []interface{}{e.Name, endpointsCell(e), since(e.CreationTimestamp, now)}, nil
	}}
	printers["EndpointSlice"] = printer{columns: []metav1.TableColumnDefinition{colName,
		{Name: "AddressType", Type: "string", Description: discoveryv1.EndpointSlice{}.SwaggerDoc()["addressType"]},
		{Name: "Ports", Type: "string", Description: discoveryv1.EndpointSlice{}.SwaggerDoc()["ports"]},
		{Name: "Endpoints", Type: "string", Description: discoveryv1.EndpointSlice{}.SwaggerDoc()["endpoints"]},
		colAge,
	}, row: func(o runtime.Object, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		s := o.(*discoveryv1.EndpointSlice)
		return []interface{}{s.Name, string(s.AddressType), slicePortsCell(s.Ports), sliceEndpointsCell(s.Endpoints),
			since(s.CreationTimestamp, now)}, nil
	}}
}

func serviceRow(s *corev1.Service, now time.Time) []interface{} {
	clusterIP := "<none>"
	if len(s.Spec.ClusterIPs) > 0 {
		clusterIP = s.Spec.ClusterIPs[0]
	}
	ports := make([]string, len(s.Spec.Ports))
	for i, p := range s.Spec.Ports {
		ports[i] = fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		if p.NodePort > 0 {
			ports[i] = fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol)
		}
	}
	portsCell := strings.Join(ports, ",")
	if portsCell == "" {
		portsCell = "<none>"
	}
	return []interface{}{s.Name, string(s.Spec.Type), clusterIP, serviceExternalIP(s), portsCell,
		since(s.CreationTimestamp, now), labels.FormatLabels(s.Spec.Selector)}
}

// serviceExternalIP is the printers' getServiceExternalIP (wide).
func serviceExternalIP(s *corev1.Service) string {
	switch s.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort:
		if len(s.Spec.ExternalIPs) > 0 {
			return strings.Join(s.Spec.ExternalIPs, ",")
		}
		return "<none>"
	case corev1.ServiceTypeLoadBalancer:
		seen := map[string]bool{}
		var lb []string
		for _, ing := range s.Status.LoadBalancer.Ingress {
			v := ing.IP
			if v == "" {
				v = ing.Hostname
			}
			if v != "" && !seen[v] {
				seen[v] = true
				lb = append(lb, v)
			}
		}
		sort.Strings(lb)
		all := append(lb, s.Spec.ExternalIPs...)
		if len(all) > 0 {
			return strings.Join(all, ",")
		}
		return "<pending>"
	case corev1.ServiceTypeExternalName:
		return s.Spec.ExternalName
	}
	return "<unknown>"
}

func slicePortsCell(ports []discoveryv1.EndpointPort) string {
	var list []string
	for _, p := range ports {
		if len(list) == 3 {
			break
		}
		n := "*"
		if p.Port != nil {
			n = strconv.Itoa(int(*p.Port))
		} else if p.Name != nil {
			n = *p.Name
		}
		list = append(list, n)
	}
	return withMore(list, len(ports), 3)
}

func sliceEndpointsCell(eps []discoveryv1.Endpoint) string {
	var list []string
	count := 0
	for _, ep := range eps {
		for _, a := range ep.Addresses {
			if len(list) < 3 {
				list = append(list, a)
			}
			count++
		}
	}
	return withMore(list, count, 3)
}

// withMore is the printers' listWithMoreString.
func withMore(list []string, count, max int) string {
	ret := strings.Join(list, ",")
	if count > max {
		return fmt.Sprintf("%s + %d more...", ret, count-max)
	}
	if ret == "" {
		ret = "<unset>"
	}
	return ret
}

// endpointsCell is the printers' formatEndpoints: ip:port of the ready
// addresses, at most three.
func endpointsCell(e *corev1.Endpoints) string {
	if len(e.Subsets) == 0 {
		return "<none>"
	}
	var list []string
	count := 0
	add := func(s string) {
		if len(list) < 3 {
			list = append(list, s)
		}
		count++
	}
	for _, ss := range e.Subsets {
		if len(ss.Ports) == 0 {
			for _, a := range ss.Addresses {
				add(a.IP)
			}
			continue
		}
		for _, p := range ss.Ports {
			for _, a := range ss.Addresses {
				add(net.JoinHostPort(a.IP, strconv.Itoa(int(p.Port))))
			}
		}
	}
	ret := strings.Join(list, ",")
	if count > 3 {
		return fmt.Sprintf("%s + %d more...", ret, count-3)
	}
	return ret
}
