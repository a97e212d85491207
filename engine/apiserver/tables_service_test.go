package apiserver

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestServiceRow checks TYPE, CLUSTER-IP, EXTERNAL-IP, PORT(S) and SELECTOR
// as kubectl get svc -o wide prints them.
func TestServiceRow(t *testing.T) {
	svc := func(typ corev1.ServiceType, mutate func(*corev1.ServiceSpec)) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", CreationTimestamp: ago(2 * time.Minute)},
			Spec: corev1.ServiceSpec{Type: typ, ClusterIP: "10.96.3.4", ClusterIPs: []string{"10.96.3.4"},
				Selector: map[string]string{"app": "web", "tier": "fe"},
				Ports:    []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}}}
		if mutate != nil {
			mutate(&s.Spec)
		}
		return s
	}
	tests := []struct {
		name string
		svc  *corev1.Service
		want string
	}{
		{"cluster IP", svc(corev1.ServiceTypeClusterIP, nil), "[web ClusterIP 10.96.3.4 <none> 80/TCP 2m app=web,tier=fe]"},
		{"node ports", svc(corev1.ServiceTypeNodePort, func(s *corev1.ServiceSpec) {
			s.Ports = []corev1.ServicePort{{Port: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP}, {Port: 53, NodePort: 30053, Protocol: corev1.ProtocolUDP}}
		}), "[web NodePort 10.96.3.4 <none> 80:30080/TCP,53:30053/UDP 2m app=web,tier=fe]"},
		{"load balancer pending", svc(corev1.ServiceTypeLoadBalancer, nil), "[web LoadBalancer 10.96.3.4 <pending> 80/TCP 2m app=web,tier=fe]"},
		{"headless without ports or selector", svc(corev1.ServiceTypeClusterIP, func(s *corev1.ServiceSpec) {
			s.ClusterIP, s.ClusterIPs, s.Ports, s.Selector = "None", []string{"None"}, nil, nil
		}), "[web ClusterIP None <none> <none> 2m <none>]"},
		{"external name", svc(corev1.ServiceTypeExternalName, func(s *corev1.ServiceSpec) {
			s.ClusterIP, s.ClusterIPs, s.ExternalName, s.Ports = "", nil, "db.example.com", nil
		}), "[web ExternalName <none> db.example.com <none> 2m app=web,tier=fe]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fmt.Sprint(serviceRow(tt.svc, tableNow)); got != tt.want {
				t.Errorf("row %s, want %s", got, tt.want)
			}
		})
	}
}

func TestEndpointRows(t *testing.T) {
	port, name := int32(8080), "http"
	slice := &discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv4,
		Ports: []discoveryv1.EndpointPort{{Name: &name, Port: &port}}}
	for i := 1; i <= 5; i++ {
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.244.0.%d", i)}})
	}
	if got := sliceEndpointsCell(slice.Endpoints); got != "10.244.0.1,10.244.0.2,10.244.0.3 + 2 more..." {
		t.Errorf("slice endpoints %q", got)
	}
	if got := slicePortsCell(slice.Ports); got != "8080" {
		t.Errorf("slice ports %q", got)
	}
	if got := sliceEndpointsCell(nil); got != "<unset>" {
		t.Errorf("empty slice %q", got)
	}
	ep := &corev1.Endpoints{Subsets: []corev1.EndpointSubset{{
		Addresses:         []corev1.EndpointAddress{{IP: "10.244.0.1"}, {IP: "10.244.0.2"}},
		NotReadyAddresses: []corev1.EndpointAddress{{IP: "10.244.0.3"}},
		Ports:             []corev1.EndpointPort{{Port: 80}}}}}
	if got := endpointsCell(ep); got != "10.244.0.1:80,10.244.0.2:80" {
		t.Errorf("endpoints %q", got)
	}
	if got := endpointsCell(&corev1.Endpoints{}); got != "<none>" {
		t.Errorf("no subsets %q", got)
	}
}
