package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podtrace/podtrace/engine/apiserver/defaults"
	"github.com/podtrace/podtrace/engine/apiserver/servicealloc"
)

// svc is a defaulted, prepared Service as the API server validates it.
func svc(mutate func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80}}}}
	if mutate != nil {
		mutate(s)
	}
	defaults.Default(s)
	servicealloc.Prepare(s, nil)
	return s
}

func TestServiceValidation(t *testing.T) {
	tests := []struct {
		name string
		svc  *corev1.Service
		want string // the 422 message, "" when valid
	}{
		{"valid", svc(nil), ""},
		{"missing ports", svc(func(s *corev1.Service) { s.Spec.Ports = nil }),
			`Service "web" is invalid: spec.ports: Required value`},
		{"headless without ports", svc(func(s *corev1.Service) { s.Spec.Ports, s.Spec.ClusterIP = nil, "None" }), ""},
		{"port out of range", svc(func(s *corev1.Service) { s.Spec.Ports[0].Port = 70000 }),
			// targetPort defaults to the port, and is checked too, as upstream does
			`Service "web" is invalid: [spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive, spec.ports[0].targetPort: Invalid value: 70000: must be between 1 and 65535, inclusive]`},
		{"duplicate port", svc(func(s *corev1.Service) {
			s.Spec.Ports = []corev1.ServicePort{{Name: "a", Port: 80}, {Name: "b", Port: 80, TargetPort: intstr.FromInt32(8080)}}
		}), `Service "web" is invalid: spec.ports[1]: Duplicate value: core.ServicePort{Name:"", Protocol:"TCP", AppProtocol:(*string)(nil), Port:80, TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:""}, NodePort:0}`},
		{"unnamed ports", svc(func(s *corev1.Service) { s.Spec.Ports = []corev1.ServicePort{{Port: 80}, {Port: 81}} }),
			`Service "web" is invalid: [spec.ports[0].name: Required value, spec.ports[1].name: Required value]`},
		{"invalid type", svc(func(s *corev1.Service) { s.Spec.Type = "Public" }),
			`Service "web" is invalid: spec.type: Unsupported value: "Public": supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort"`},
		{"selector label", svc(func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "web!"} }),
			`Service "web" is invalid: spec.selector: Invalid value: "web!": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`},
		{"node port on ClusterIP", svc(func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 30001 }),
			"Service \"web\" is invalid: spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"},
		{"invalid cluster IP", svc(func(s *corev1.Service) { s.Spec.ClusterIP = "10.96.0.300" }),
			`Service "web" is invalid: spec.clusterIPs[0]: Invalid value: "10.96.0.300": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`},
		{"headless NodePort", svc(func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.Type = "None", corev1.ServiceTypeNodePort }),
			`Service "web" is invalid: spec.clusterIPs[0]: Invalid value: "None": may not be set to 'None' for NodePort services`},
		{"name not a DNS label", svc(func(s *corev1.Service) { s.Name = "web.v1" }),
			`Service "web.v1" is invalid: metadata.name: Invalid value: "web.v1": must not contain dots`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := ValidateCreate(tt.svc)
			got := ""
			if len(errs) > 0 {
				got = apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Service").GroupKind(), tt.svc.Name, errs).Error()
			}
			if got != tt.want {
				t.Errorf("\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestServiceUpdateClusterIPImmutable(t *testing.T) {
	old := svc(func(s *corev1.Service) { s.Spec.ClusterIP = "10.96.0.20" })
	old.ResourceVersion = "5"
	upd := old.DeepCopy()
	upd.Spec.ClusterIP, upd.Spec.ClusterIPs = "10.96.0.21", []string{"10.96.0.21"}
	errs := ValidateUpdate(upd, old)
	want := `spec.clusterIPs[0]: Invalid value: ["10.96.0.21"]: may not change once set`
	if len(errs) != 1 || !strings.Contains(errs.ToAggregate().Error(), want) {
		t.Errorf("changing the cluster IP: %v, want %s", errs, want)
	}
	same := old.DeepCopy()
	same.Spec.Ports[0].Port = 8080
	same.Spec.Ports[0].TargetPort = intstr.FromInt32(8080)
	if errs := ValidateUpdate(same, old); len(errs) > 0 {
		t.Errorf("changing the port: %v", errs)
	}
}

func TestServiceDefaults(t *testing.T) {
	s := svc(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort })
	p := s.Spec.Ports[0]
	if s.Spec.SessionAffinity != corev1.ServiceAffinityNone || p.Protocol != corev1.ProtocolTCP || p.TargetPort != intstr.FromInt32(80) ||
		s.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster || *s.Spec.InternalTrafficPolicy != corev1.ServiceInternalTrafficPolicyCluster ||
		*s.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack || s.Spec.IPFamilies[0] != corev1.IPv4Protocol {
		t.Errorf("defaults: %+v", s.Spec)
	}
	if c := svc(nil); c.Spec.Type != corev1.ServiceTypeClusterIP || c.Spec.ExternalTrafficPolicy != "" {
		t.Errorf("ClusterIP defaults: type %q externalTrafficPolicy %q", c.Spec.Type, c.Spec.ExternalTrafficPolicy)
	}
}
