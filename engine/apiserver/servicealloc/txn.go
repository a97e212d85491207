package servicealloc

import (
	"fmt"
	"net"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Txn is one Service write's allocations, as the transaction of
// kube-apiserver's service storage (alloc.go's allocateCreate and
// allocateUpdate): the write path ends it once, with Commit after the
// Service is stored or Revert when it is not.
type Txn struct {
	a         *Allocators
	allocated []string // given back by Revert
	dropped   []string // given back by Commit: held by the old Service only
}

// Commit ends a stored write: the values the old Service held and the new
// one does not are given back (upstream's afterUpdate).
func (t *Txn) Commit() { t.a.releaseKeys(t.dropped) }

// Revert ends a write that was not stored: what it allocated is given back.
func (t *Txn) Revert() { t.a.releaseKeys(t.allocated) }

// Begin gives svc the cluster IP and node ports it needs that old (nil on
// a create) does not already hold: the requested ones when set, new ones
// otherwise. On error nothing stays allocated. With dryRun nothing is
// allocated at all, as with upstream's DryRun allocators: requested node
// ports are checked against the allocated ones, a requested cluster IP only
// against the range, and missing values are filled with upstream's
// placeholders (the range's network address, node ports from 32769).
func (a *Allocators) Begin(svc, old *corev1.Service, dryRun bool) (*Txn, field.ErrorList) {
	a.mu.Lock()
	defer a.mu.Unlock()
	o := &op{a: a, dry: dryRun}
	if errs := o.allocate(svc, old); len(errs) > 0 {
		if !dryRun {
			a.releaseKeysLocked(o.keys)
		}
		return nil, errs
	}
	if dryRun {
		return &Txn{a: a}, nil
	}
	now := a.clock.Now()
	for _, k := range o.keys {
		a.since[k] = now
	}
	t := &Txn{a: a, allocated: o.keys}
	if old != nil {
		t.dropped = dropped(old, svc)
	}
	return t, nil
}

// dropped lists the values old holds and svc does not.
func dropped(old, svc *corev1.Service) []string {
	kept := map[string]bool{}
	for _, k := range heldKeys(svc) {
		kept[k] = true
	}
	var out []string
	for _, k := range heldKeys(old) {
		if !kept[k] {
			out = append(out, k)
		}
	}
	return out
}

// op allocates for one write, recording what it took; a dry op takes
// nothing from the allocators and records what it pretended to take.
type op struct {
	a     *Allocators
	dry   bool
	keys  []string
	ports []int // the node ports among keys
}

func (o *op) allocate(svc, old *corev1.Service) field.ErrorList {
	if NeedsClusterIP(svc) && (old == nil || !NeedsClusterIP(old)) {
		if errs := o.allocClusterIP(svc); len(errs) > 0 {
			return errs
		}
	}
	held := map[int]bool{}
	if old != nil {
		for _, p := range old.Spec.Ports {
			if p.NodePort != 0 {
				held[int(p.NodePort)] = true
			}
		}
	}
	if errs := o.allocNodePorts(svc, held); len(errs) > 0 {
		return errs
	}
	if NeedsHealthCheck(svc) && (old == nil || !NeedsHealthCheck(old)) {
		return o.allocHealthCheckNodePort(svc)
	}
	return nil
}

func (o *op) takeIP(ip net.IP) error {
	if o.dry {
		_, err := o.a.ips.index(ip)
		return err
	}
	if err := o.a.ips.allocate(ip); err != nil {
		return err
	}
	o.keys = append(o.keys, ipKey(ip))
	return nil
}

func (o *op) nextIP() (net.IP, error) {
	if o.dry {
		return o.a.ips.cidr.IP, nil
	}
	ip, err := o.a.ips.next()
	if err == nil {
		o.keys = append(o.keys, ipKey(ip))
	}
	return ip, err
}

func (o *op) takePort(p int) error {
	if o.dry {
		if o.a.ports.has(p) || slices.Contains(o.ports, p) {
			return errPortAllocated
		}
	} else if err := o.a.ports.allocate(p); err != nil {
		return err
	}
	o.tookPort(p)
	return nil
}

func (o *op) tookPort(p int) {
	o.keys, o.ports = append(o.keys, portKey(p)), append(o.ports, p)
}

// nextPort picks a free node port; a dry op answers upstream's dummy: one
// above the highest port it took, or 32769.
func (o *op) nextPort() (int, error) {
	if !o.dry {
		p, err := o.a.ports.next()
		if err == nil {
			o.tookPort(p)
		}
		return p, err
	}
	last := 32768
	if len(o.ports) > 0 {
		last = slices.Max(o.ports)
	}
	o.tookPort(last + 1)
	return last + 1, nil
}

func (o *op) allocClusterIP(svc *corev1.Service) field.ErrorList {
	path := field.NewPath("spec", "clusterIPs")
	switch svc.Spec.ClusterIP {
	case corev1.ClusterIPNone:
		return nil
	case "":
		ip, err := o.nextIP()
		if err != nil {
			return field.ErrorList{field.InternalError(path,
				fmt.Errorf("failed to allocate a serviceIP for Service %q: %w", svc.Name, err))}
		}
		svc.Spec.ClusterIP, svc.Spec.ClusterIPs = ip.String(), []string{ip.String()}
		return nil
	}
	ip := net.ParseIP(svc.Spec.ClusterIP)
	if ip == nil {
		return field.ErrorList{field.InternalError(path, fmt.Errorf("failed to parse service IP %q", svc.Spec.ClusterIP))}
	}
	if err := o.takeIP(ip); err != nil {
		return field.ErrorList{field.Invalid(path, svc.Spec.ClusterIPs,
			fmt.Sprintf("failed to allocate IP %v: %v", svc.Spec.ClusterIP, err))}
	}
	return nil
}

// allocNodePorts is upstream's initNodePorts: ports sharing a port number
// share a node port; requested node ports are honoured even when the type
// allocates none; held ones (the old object's) are kept without allocating.
func (o *op) allocNodePorts(svc *corev1.Service, held map[int]bool) field.ErrorList {
	take := func(np int) error {
		if held[np] {
			return nil
		}
		if err := o.takePort(np); err != nil {
			return err
		}
		held[np] = true
		return nil
	}
	byPort := map[int32]int32{}
	for i := range svc.Spec.Ports {
		sp := &svc.Spec.Ports[i]
		path := field.NewPath("spec", "ports").Index(i).Child("nodePort")
		if sp.NodePort == 0 && !NeedsNodePorts(svc) {
			continue
		}
		shared := byPort[sp.Port]
		switch {
		case shared == 0:
			np := requestedNodePort(sp.Port, svc.Spec.Ports)
			if np != 0 {
				if err := take(int(np)); err != nil {
					return field.ErrorList{field.Invalid(path, np, err.Error())}
				}
			} else {
				next, err := o.nextPort()
				if err != nil {
					return field.ErrorList{field.InternalError(path, fmt.Errorf("failed to allocate a nodePort: %w", err))}
				}
				np = int32(next)
			}
			sp.NodePort = np
			byPort[sp.Port] = np
		case sp.NodePort == 0:
			sp.NodePort = shared
		case sp.NodePort != shared:
			if err := take(int(sp.NodePort)); err != nil {
				return field.ErrorList{field.Invalid(path, sp.NodePort, err.Error())}
			}
		}
	}
	return nil
}

// allocHealthCheckNodePort reserves the requested health check node port,
// or allocates one. Upstream answers its failures with a 500; here they are
// field errors of type InternalError.
func (o *op) allocHealthCheckNodePort(svc *corev1.Service) field.ErrorList {
	path := field.NewPath("spec", "healthCheckNodePort")
	if hc := int(svc.Spec.HealthCheckNodePort); hc != 0 {
		if err := o.takePort(hc); err != nil {
			return field.ErrorList{field.InternalError(path, fmt.Errorf("failed to allocate requested HealthCheck NodePort %v: %v", hc, err))}
		}
		return nil
	}
	hc, err := o.nextPort()
	if err != nil {
		return field.ErrorList{field.InternalError(path, fmt.Errorf("failed to allocate a HealthCheck NodePort %v: %v", hc, err))}
	}
	svc.Spec.HealthCheckNodePort = int32(hc)
	return nil
}

func requestedNodePort(port int32, ports []corev1.ServicePort) int32 {
	for _, p := range ports {
		if p.Port == port && p.NodePort != 0 {
			return p.NodePort
		}
	}
	return 0
}
