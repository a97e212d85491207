package controlplane_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/podtrace/podtrace/engine/enginetest"
)

// svc is a Service of type typ asking for cluster IP ip and, on each of its
// ports (80, 81, ...), the node port in nodePorts (0: any).
func svc(name string, typ corev1.ServiceType, ip string, nodePorts ...int32) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Type: typ, ClusterIP: ip, Selector: map[string]string{"app": name}}}
	for i, np := range nodePorts {
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "p" + string(rune('a'+i)), Port: 80 + int32(i), NodePort: np})
	}
	return s
}

// services is the Services API of the default namespace, with helpers that
// fail the test on an unexpected error.
type services struct {
	t   *testing.T
	api typedcorev1.ServiceInterface
}

func (s services) create(obj *corev1.Service, opts ...metav1.CreateOptions) *corev1.Service {
	s.t.Helper()
	var o metav1.CreateOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	got, err := s.api.Create(context.Background(), obj, o)
	if err != nil {
		s.t.Fatalf("create %s: %v", obj.Name, err)
	}
	return got
}

func (s services) update(obj *corev1.Service, opts ...metav1.UpdateOptions) *corev1.Service {
	s.t.Helper()
	var o metav1.UpdateOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	got, err := s.api.Update(context.Background(), obj, o)
	if err != nil {
		s.t.Fatalf("update %s: %v", obj.Name, err)
	}
	return got
}

func (s services) delete(name string) {
	s.t.Helper()
	if err := s.api.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		s.t.Fatalf("delete %s: %v", name, err)
	}
}

var dryRun = []string{metav1.DryRunAll}

// TestServiceAllocationTransactions checks, through the API, that a
// Service write holds a cluster IP or node port exactly when the Service
// stored in etcd does: the next write may take whatever a dry run, a failed
// create, an update or a delete left free, at once (not after the repair
// loop's minute).
func TestServiceAllocationTransactions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	env := enginetest.Start(t)
	s := services{t, env.Admin().CoreV1().Services("default")}

	t.Run("dry-run create allocates nothing", func(t *testing.T) {
		s := services{t, s.api}
		dry := s.create(svc("dry", corev1.ServiceTypeNodePort, "10.96.1.10", 30080), metav1.CreateOptions{DryRun: dryRun})
		if dry.Spec.ClusterIP != "10.96.1.10" || dry.Spec.Ports[0].NodePort != 30080 {
			t.Errorf("dry-run answer: %s %d", dry.Spec.ClusterIP, dry.Spec.Ports[0].NodePort)
		}
		// Values to pick are filled with upstream's placeholders.
		dry = s.create(svc("dry", corev1.ServiceTypeNodePort, "", 0), metav1.CreateOptions{DryRun: dryRun})
		if dry.Spec.ClusterIP != "10.96.0.0" || dry.Spec.Ports[0].NodePort != 32769 {
			t.Errorf("dry-run picks: %s %d, want 10.96.0.0 32769", dry.Spec.ClusterIP, dry.Spec.Ports[0].NodePort)
		}
		if _, err := s.api.Get(context.Background(), "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("dry-run create stored the Service: %v", err)
		}
		real := s.create(svc("real", corev1.ServiceTypeNodePort, "10.96.1.10", 30080))
		if real.Spec.ClusterIP != "10.96.1.10" || real.Spec.Ports[0].NodePort != 30080 {
			t.Errorf("real create: %s %d", real.Spec.ClusterIP, real.Spec.Ports[0].NodePort)
		}
		// A dry run still refuses a taken node port.
		_, err := s.api.Create(context.Background(), svc("dry2", corev1.ServiceTypeNodePort, "", 30080), metav1.CreateOptions{DryRun: dryRun})
		if err == nil || !strings.Contains(err.Error(), "spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated") {
			t.Errorf("dry run with a taken node port: %v", err)
		}
	})

	t.Run("failed create releases what it allocated", func(t *testing.T) {
		s := services{t, s.api}
		s.create(svc("taken", corev1.ServiceTypeNodePort, "10.96.2.10", 30090))
		for _, tc := range []struct {
			name string
			obj  *corev1.Service
			want string
		}{
			{"already exists", svc("taken", corev1.ServiceTypeNodePort, "10.96.2.20", 30091), `services "taken" already exists`},
			{"invalid", func() *corev1.Service {
				o := svc("invalid", corev1.ServiceTypeNodePort, "10.96.2.20", 30091)
				o.Spec.Ports[0].Protocol = "ICMP"
				return o
			}(), `spec.ports[0].protocol: Unsupported value: "ICMP"`},
			{"second node port taken", svc("half", corev1.ServiceTypeNodePort, "10.96.2.20", 30091, 30090),
				"spec.ports[1].nodePort: Invalid value: 30090: provided port is already allocated"},
		} {
			_, err := s.api.Create(context.Background(), tc.obj, metav1.CreateOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
			}
		}
		s.create(svc("after", corev1.ServiceTypeNodePort, "10.96.2.20", 30091))
	})

	t.Run("update releases what it drops", func(t *testing.T) {
		s := services{t, s.api}
		np := s.create(svc("np", corev1.ServiceTypeNodePort, "10.96.3.10", 30100, 30101))
		// A port removed: its node port is free at once.
		np.Spec.Ports = np.Spec.Ports[:1]
		np = s.update(np)
		s.create(svc("takes-30101", corev1.ServiceTypeNodePort, "", 30101))
		// NodePort → ClusterIP: the remaining node port too.
		np.Spec.Type, np.Spec.Ports[0].NodePort = corev1.ServiceTypeClusterIP, 0
		np = s.update(np)
		if np.Spec.Ports[0].NodePort != 0 || np.Spec.ClusterIP != "10.96.3.10" {
			t.Errorf("NodePort → ClusterIP: %s %d", np.Spec.ClusterIP, np.Spec.Ports[0].NodePort)
		}
		s.create(svc("takes-30100", corev1.ServiceTypeNodePort, "", 30100))
		// → ExternalName: the cluster IP.
		np.Spec.Type, np.Spec.ExternalName = corev1.ServiceTypeExternalName, "example.com"
		np.Spec.ClusterIP, np.Spec.ClusterIPs, np.Spec.IPFamilies, np.Spec.IPFamilyPolicy = "", nil, nil, nil
		s.update(np)
		s.create(svc("takes-ip", corev1.ServiceTypeClusterIP, "10.96.3.10", 0))
	})

	t.Run("dry-run update allocates nothing", func(t *testing.T) {
		s := services{t, s.api}
		cur := s.create(svc("grow", corev1.ServiceTypeNodePort, "", 30110))
		cur.Spec.Ports = append(cur.Spec.Ports, corev1.ServicePort{Name: "pb", Port: 81, NodePort: 30111})
		if got := s.update(cur, metav1.UpdateOptions{DryRun: dryRun}); len(got.Spec.Ports) != 2 || got.Spec.Ports[1].NodePort != 30111 {
			t.Errorf("dry-run update answer: %+v", got.Spec.Ports)
		}
		s.create(svc("takes-30111", corev1.ServiceTypeNodePort, "", 30111))
	})

	t.Run("a full node port range is an internal error", func(t *testing.T) {
		s := services{t, s.api}
		var err error
		var created []string
		for i := 0; err == nil && i < 4; i++ { // 3 × 1,000 ports exceed the 2,768 node ports
			many := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("many-%d", i)},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": "many"}}}
			for p := range 1000 {
				many.Spec.Ports = append(many.Spec.Ports, corev1.ServicePort{Name: fmt.Sprintf("p%d", p), Port: int32(1000 + p)})
			}
			if _, err = s.api.Create(context.Background(), many, metav1.CreateOptions{}); err == nil {
				created = append(created, many.Name)
			}
		}
		if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "Internal error occurred: failed to allocate a nodePort: range is full") {
			t.Fatalf("creating past the node port range: %v, want upstream's 500", err)
		}
		// The failed create gave back the ports it had taken before the
		// range ran out: they serve the next Service's two node ports.
		s.create(svc("after-full", corev1.ServiceTypeNodePort, "", 0, 0))
		for _, name := range created {
			s.delete(name)
		}
	})

	t.Run("delete releases at once", func(t *testing.T) {
		s := services{t, s.api}
		s.create(svc("gone", corev1.ServiceTypeNodePort, "10.96.4.10", 30120))
		s.delete("gone")
		again := s.create(svc("again", corev1.ServiceTypeNodePort, "10.96.4.10", 30120))
		if again.Spec.ClusterIP != "10.96.4.10" || again.Spec.Ports[0].NodePort != 30120 {
			t.Errorf("reused: %s %d", again.Spec.ClusterIP, again.Spec.Ports[0].NodePort)
		}
	})
}
