package servicealloc

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// nodePort returns a NodePort Service asking for ip and node port np (0: any).
func nodePort(name, ip string, np int32) *corev1.Service {
	return service(name, corev1.ServiceTypeNodePort, ip, corev1.ServicePort{Port: 80, Protocol: corev1.ProtocolTCP, NodePort: np})
}

// TestTxn runs one write per case on allocators holding a stored NodePort
// Service (10.96.0.20, node port 30100) and checks what is allocated after
// the write ends.
func TestTxn(t *testing.T) {
	type write struct {
		svc, old *corev1.Service
		dryRun   bool
		commit   bool // false: the write was not stored
	}
	toClusterIP := func() *corev1.Service {
		s := nodePort("held", "10.96.0.20", 30100)
		s.Spec.Type, s.Spec.Ports[0].NodePort = corev1.ServiceTypeClusterIP, 0
		return s
	}
	toExternalName := func() *corev1.Service {
		return &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com",
			Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}}}
	}
	addPort := func() *corev1.Service {
		s := nodePort("held", "10.96.0.20", 30100)
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "b", Port: 81, Protocol: corev1.ProtocolTCP, NodePort: 30200})
		return s
	}
	for _, tc := range []struct {
		name      string
		write     write
		allocated []string
		free      []string
	}{
		{"dry-run create", write{svc: nodePort("new", "10.96.0.30", 30080), dryRun: true, commit: true},
			[]string{"10.96.0.20", "30100"}, []string{"10.96.0.30", "30080"}},
		{"create stored", write{svc: nodePort("new", "10.96.0.30", 30080), commit: true},
			[]string{"10.96.0.30", "30080"}, nil},
		{"create reverted", write{svc: nodePort("new", "10.96.0.30", 30080)},
			[]string{"10.96.0.20", "30100"}, []string{"10.96.0.30", "30080"}},
		{"NodePort to ClusterIP stored", write{svc: toClusterIP(), old: nodePort("held", "10.96.0.20", 30100), commit: true},
			[]string{"10.96.0.20"}, []string{"30100"}},
		{"NodePort to ClusterIP reverted", write{svc: toClusterIP(), old: nodePort("held", "10.96.0.20", 30100)},
			[]string{"10.96.0.20", "30100"}, nil},
		{"to ExternalName stored", write{svc: toExternalName(), old: nodePort("held", "10.96.0.20", 30100), commit: true},
			nil, []string{"10.96.0.20", "30100"}},
		{"port added, reverted", write{svc: addPort(), old: nodePort("held", "10.96.0.20", 30100)},
			[]string{"10.96.0.20", "30100"}, []string{"30200"}},
		{"port added, dry run", write{svc: addPort(), old: nodePort("held", "10.96.0.20", 30100), dryRun: true, commit: true},
			[]string{"10.96.0.20", "30100"}, []string{"30200"}},
		{"port removed, stored", write{svc: nodePort("held", "10.96.0.20", 30100), old: addPort(), commit: true},
			[]string{"10.96.0.20", "30100"}, []string{"30200"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Now())
			a := New(clk)
			stored := []*corev1.Service{nodePort("held", "10.96.0.20", 30100)}
			if tc.write.old != nil {
				stored = []*corev1.Service{tc.write.old}
			}
			a.Repair(stored, clk.Now(), 0)
			txn, errs := a.Begin(tc.write.svc, tc.write.old, tc.write.dryRun)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			if tc.write.commit {
				txn.Commit()
			} else {
				txn.Revert()
			}
			for _, v := range tc.allocated {
				if !a.Allocated(v) {
					t.Errorf("%s free, want allocated", v)
				}
			}
			for _, v := range tc.free {
				if a.Allocated(v) {
					t.Errorf("%s allocated, want free", v)
				}
			}
		})
	}
}

// TestDryRunCreate checks what a dry run fills in and refuses, as
// upstream's DryRun allocators do.
func TestDryRunCreate(t *testing.T) {
	a := New(clocktesting.NewFakeClock(time.Now()))
	if errs := alloc(a, nodePort("held", "10.96.0.20", 30100), nil); len(errs) > 0 {
		t.Fatal(errs)
	}
	s := service("dry", corev1.ServiceTypeNodePort, "",
		corev1.ServicePort{Name: "a", Port: 80, Protocol: corev1.ProtocolTCP, NodePort: 30080},
		corev1.ServicePort{Name: "b", Port: 81, Protocol: corev1.ProtocolTCP})
	if _, errs := a.Begin(s, nil, true); len(errs) > 0 {
		t.Fatal(errs)
	}
	if s.Spec.ClusterIP != "10.96.0.0" || s.Spec.Ports[0].NodePort != 30080 || s.Spec.Ports[1].NodePort != 30081 {
		t.Errorf("dry run filled in %s %d %d, want 10.96.0.0 30080 30081",
			s.Spec.ClusterIP, s.Spec.Ports[0].NodePort, s.Spec.Ports[1].NodePort)
	}
	if a.Allocated("30080") || a.Allocated("30081") || a.Allocated("10.96.0.0") {
		t.Error("a dry run allocated")
	}
	clash := nodePort("clash", "", 30100)
	want := "spec.ports[0].nodePort: Invalid value: 30100: provided port is already allocated"
	if _, errs := a.Begin(clash, nil, true); errText(errs) != want {
		t.Errorf("dry run with a taken node port: %v, want %s", errs, want)
	}
}
