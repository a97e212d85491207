package servicealloc

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clocktesting "k8s.io/utils/clock/testing"
)

func service(name string, typ corev1.ServiceType, clusterIP string, ports ...corev1.ServicePort) *corev1.Service {
	if len(ports) == 0 {
		ports = []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}
	}
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: typ, ClusterIP: clusterIP, Ports: ports, Selector: map[string]string{"app": name}}}
	if errs := Prepare(s, nil); len(errs) > 0 {
		panic(errs.ToAggregate())
	}
	return s
}

func TestAllocateClusterIP(t *testing.T) {
	a := New(clocktesting.NewFakeClock(time.Now()))
	_, cidr, _ := net.ParseCIDR(ServiceCIDR)
	seen := map[string]bool{}
	for i := 0; i < 200; i++ {
		s := service("s", corev1.ServiceTypeClusterIP, "")
		if errs := alloc(a, s, nil); len(errs) > 0 {
			t.Fatal(errs)
		}
		ip := net.ParseIP(s.Spec.ClusterIP)
		if !cidr.Contains(ip) || s.Spec.ClusterIPs[0] != s.Spec.ClusterIP || seen[s.Spec.ClusterIP] {
			t.Fatalf("allocated %q (%v), seen before: %v", s.Spec.ClusterIP, s.Spec.ClusterIPs, seen[s.Spec.ClusterIP])
		}
		// dynamic allocations come from above the static band (256 addresses)
		if v4 := ip.To4(); v4[2] == 0 && v4[1] == 96 {
			t.Errorf("dynamic allocation %s fell into the static band", ip)
		}
		seen[s.Spec.ClusterIP] = true
	}
	if got := s0(a, "10.96.0.10"); got != "" {
		t.Errorf("requesting a free IP: %s", got)
	}
	want := `spec.clusterIPs: Invalid value: ["10.96.0.10"]: failed to allocate IP 10.96.0.10: provided IP is already allocated`
	if got := s0(a, "10.96.0.10"); got != want {
		t.Errorf("requesting a taken IP:\n got %s\nwant %s", got, want)
	}
	want = `spec.clusterIPs: Invalid value: ["10.0.0.5"]: failed to allocate IP 10.0.0.5: the provided IP (10.0.0.5) is not in the valid range. The range of valid IPs is 10.96.0.0/12`
	if got := s0(a, "10.0.0.5"); got != want {
		t.Errorf("requesting an IP out of range:\n got %s\nwant %s", got, want)
	}
	if got := s0(a, "None"); got != "" || a.Allocated("None") {
		t.Errorf("headless: %s", got)
	}
}

// s0 creates a ClusterIP Service asking for ip and returns the errors' text.
func s0(a *Allocators, ip string) string {
	return errText(alloc(a, service("x", corev1.ServiceTypeClusterIP, ip), nil))
}

func errText(errs field.ErrorList) string {
	if len(errs) == 0 {
		return ""
	}
	return strings.TrimSpace(errs.ToAggregate().Error())
}

func TestAllocateNodePorts(t *testing.T) {
	a := New(clocktesting.NewFakeClock(time.Now()))
	s := service("np", corev1.ServiceTypeNodePort, "",
		corev1.ServicePort{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP},
		corev1.ServicePort{Name: "dns", Port: 80, Protocol: corev1.ProtocolUDP},
		corev1.ServicePort{Name: "fixed", Port: 90, Protocol: corev1.ProtocolTCP, NodePort: 30005})
	if errs := alloc(a, s, nil); len(errs) > 0 {
		t.Fatal(errs)
	}
	p := s.Spec.Ports
	if p[0].NodePort < NodePortFirst || p[0].NodePort > NodePortLast || p[1].NodePort != p[0].NodePort || p[2].NodePort != 30005 {
		t.Fatalf("node ports %d %d %d", p[0].NodePort, p[1].NodePort, p[2].NodePort)
	}
	clash := service("clash", corev1.ServiceTypeNodePort, "", corev1.ServicePort{Port: 81, Protocol: corev1.ProtocolTCP, NodePort: 30005})
	errs := alloc(a, clash, nil)
	if want := "spec.ports[0].nodePort: Invalid value: 30005: provided port is already allocated"; errText(errs) != want {
		t.Errorf("taken node port: %v", errs)
	}
	if a.Allocated(clash.Spec.ClusterIP) {
		t.Errorf("a failed allocation kept its cluster IP %s", clash.Spec.ClusterIP)
	}
	out := service("out", corev1.ServiceTypeNodePort, "", corev1.ServicePort{Port: 81, Protocol: corev1.ProtocolTCP, NodePort: 80})
	if want := "spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid range. The range of valid ports is 30000-32767"; errText(alloc(a, out, nil)) != want {
		t.Errorf("node port out of range: %v", alloc(a, out, nil))
	}
	// An update keeps the node ports it holds and allocates none again.
	upd := s.DeepCopy()
	if errs := alloc(a, upd, s); len(errs) > 0 {
		t.Errorf("update: %v", errs)
	}
	a.Release(s)
	for _, v := range []string{s.Spec.ClusterIP, "30005"} {
		if a.Allocated(v) {
			t.Errorf("%s still allocated after release", v)
		}
	}
}

func TestRepair(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	a := New(clk)
	kept := service("kept", corev1.ServiceTypeNodePort, "10.96.0.20")
	kept.Spec.Ports[0].NodePort = 30100
	// Rebuild at start: the stored Services' values are marked.
	a.Repair([]*corev1.Service{kept}, clk.Now(), time.Minute)
	if !a.Allocated("10.96.0.20") || !a.Allocated("30100") {
		t.Fatal("repair did not mark the stored service's IP and node port")
	}
	leaked := service("leaked", corev1.ServiceTypeClusterIP, "10.96.0.30")
	if errs := alloc(a, leaked, nil); len(errs) > 0 {
		t.Fatal(errs)
	}
	a.Repair([]*corev1.Service{kept}, clk.Now(), time.Minute)
	if !a.Allocated("10.96.0.30") {
		t.Error("repair freed an address allocated for a write still in flight")
	}
	clk.Step(2 * time.Minute)
	a.Repair([]*corev1.Service{kept}, clk.Now(), time.Minute)
	if a.Allocated("10.96.0.30") || !a.Allocated("10.96.0.20") {
		t.Error("repair did not free the leaked address, or freed the stored one")
	}
}

func TestPrepare(t *testing.T) {
	s := service("p", corev1.ServiceTypeClusterIP, "10.96.0.7")
	if s.Spec.ClusterIPs[0] != "10.96.0.7" || *s.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack ||
		len(s.Spec.IPFamilies) != 1 || s.Spec.IPFamilies[0] != corev1.IPv4Protocol {
		t.Errorf("prepared create: %+v", s.Spec)
	}
	// A PUT without the cluster IP and node port keeps them.
	old := service("p", corev1.ServiceTypeNodePort, "10.96.0.7")
	old.Spec.Ports[0].NodePort = 30001
	put := &corev1.Service{ObjectMeta: old.ObjectMeta, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort,
		Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}}}
	if errs := Prepare(put, old); len(errs) > 0 || put.Spec.ClusterIP != "10.96.0.7" || put.Spec.Ports[0].NodePort != 30001 {
		t.Errorf("put: %v %+v", errs, put.Spec)
	}
	// NodePort → ClusterIP drops the node port the user did not change.
	toCIP := old.DeepCopy()
	toCIP.Spec.Type = corev1.ServiceTypeClusterIP
	if Prepare(toCIP, old); toCIP.Spec.Ports[0].NodePort != 0 {
		t.Errorf("type change kept node port %d", toCIP.Spec.Ports[0].NodePort)
	}
	v6 := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "fd00::1"}}
	if errs := Prepare(v6, nil); errText(errs) != `spec.clusterIPs[0]: Invalid value: ["fd00::1"]: IPv6 is not configured on this cluster` {
		t.Errorf("IPv6 cluster IP: %v", errs)
	}
}

func TestHealthCheckNodePort(t *testing.T) {
	a := New(clocktesting.NewFakeClock(time.Now()))
	lb := service("lb", corev1.ServiceTypeLoadBalancer, "")
	lb.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	if errs := alloc(a, lb, nil); len(errs) > 0 {
		t.Fatal(errs)
	}
	hc := lb.Spec.HealthCheckNodePort
	if hc < NodePortFirst || hc > NodePortLast || hc == lb.Spec.Ports[0].NodePort {
		t.Fatalf("health check node port %d (node port %d)", hc, lb.Spec.Ports[0].NodePort)
	}
	// Back to Cluster: the unchanged health check port is dropped before validation.
	toCluster := lb.DeepCopy()
	toCluster.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	if Prepare(toCluster, lb); toCluster.Spec.HealthCheckNodePort != 0 {
		t.Errorf("health check node port kept: %d", toCluster.Spec.HealthCheckNodePort)
	}
	a.Release(lb)
	if a.Allocated(strconv.Itoa(int(hc))) {
		t.Errorf("health check node port %d still allocated", hc)
	}
}

// alloc allocates for svc in a write that is then stored.
func alloc(a *Allocators, svc, old *corev1.Service) field.ErrorList {
	txn, errs := a.Begin(svc, old, false)
	if len(errs) == 0 {
		txn.Commit()
	}
	return errs
}
