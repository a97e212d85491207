package controlplane

import (
	"context"
	"errors"
	"net"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/podtrace/podtrace/engine/apiserver"
	"github.com/podtrace/podtrace/engine/apiserver/servicealloc"
)

// Service IP and node port repair, as kube-apiserver's repair controllers
// run it: how often, and how long a value allocated for a write is kept
// although no stored Service holds it yet.
const (
	serviceRepairInterval = time.Minute
	serviceRepairGrace    = time.Minute
)

// services is what the service REST storage adds to the generic one:
// cluster IP and node port allocation in a transaction around each write,
// release on delete.
type services struct {
	alloc *servicealloc.Allocators
	clock clock.Clock
}

func newServices(clk clock.Clock) *services {
	return &services{alloc: servicealloc.New(clk), clock: clk}
}

// validate prepares a Service as the service storage does before validating
// it, and validates it; its allocation is the Begin step that follows (so
// an invalid Service allocates nothing). Other kinds are only validated.
func (s *services) validate(obj, old runtime.Object) field.ErrorList {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return validate(obj, old)
	}
	oldSvc, _ := old.(*corev1.Service)
	if errs := servicealloc.Prepare(svc, oldSvc); len(errs) > 0 {
		return errs
	}
	return validate(obj, old)
}

// begin is the services' Begin step (upstream's beginCreate and
// beginUpdate): it allocates what the Service needs in a transaction the
// write path commits or reverts.
func (s *services) begin(obj, old runtime.Object, dryRun bool) (apiserver.Transaction, error) {
	svc := obj.(*corev1.Service)
	oldSvc, _ := old.(*corev1.Service)
	txn, errs := s.alloc.Begin(svc, oldSvc, dryRun)
	if len(errs) == 0 {
		return txn, nil
	}
	// Upstream answers a full range or an unparsable stored IP as an
	// internal error (500), a refused requested value as Invalid (422).
	for _, e := range errs {
		if e.Type == field.ErrorTypeInternal {
			return nil, apierrors.NewInternalError(errors.New(e.Detail))
		}
	}
	return nil, apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Service").GroupKind(), svc.Name, errs)
}

// released gives back a deleted Service's IP and ports. A Service that was
// never stored (no resourceVersion: its create failed) holds nothing: its
// write's transaction gave back what it allocated.
func (s *services) released(obj runtime.Object) {
	if svc, ok := obj.(*corev1.Service); ok && svc.ResourceVersion != "" {
		s.alloc.Release(svc)
	}
}

// repair makes the allocators agree with the stored Services.
func (s *services) repair(ctx context.Context, store *apiserver.ObjectStore) error {
	listedAt := s.clock.Now()
	objs, err := store.List(ctx, "services", "")
	if err != nil {
		return err
	}
	svcs := make([]*corev1.Service, 0, len(objs))
	for _, o := range objs {
		if svc, ok := o.(*corev1.Service); ok {
			svcs = append(svcs, svc)
		}
	}
	s.alloc.Repair(svcs, listedAt, serviceRepairGrace)
	return nil
}

// repairLoop runs repair every serviceRepairInterval until ctx ends.
func (s *services) repairLoop(ctx context.Context, store *apiserver.ObjectStore) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.clock.After(serviceRepairInterval):
			_ = s.repair(ctx, store) // retried at the next interval
		}
	}
}

// kubernetesService is the Service kube-apiserver keeps in namespace
// default for itself: the range's first IP, port 443 "https" to the
// server's secure port.
func kubernetesService(address string) *corev1.Service {
	target := 6443
	if _, p, err := net.SplitHostPort(address); err == nil {
		if n, err := strconv.Atoi(p); err == nil && n != 0 {
			target = n
		}
	}
	single := corev1.IPFamilyPolicySingleStack
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{"provider": "kubernetes", "component": "apiserver"}},
		Spec: corev1.ServiceSpec{
			Ports: []corev1.ServicePort{{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443,
				TargetPort: intstr.FromInt32(int32(target))}},
			ClusterIP:       servicealloc.KubernetesServiceIP,
			ClusterIPs:      []string{servicealloc.KubernetesServiceIP},
			IPFamilies:      []corev1.IPFamily{corev1.IPv4Protocol},
			IPFamilyPolicy:  &single,
			SessionAffinity: corev1.ServiceAffinityNone,
			Type:            corev1.ServiceTypeClusterIP,
		},
	}
}
