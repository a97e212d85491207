// Package servicealloc hands out Services' cluster IPs (service CIDR
// 10.96.0.0/12) and node ports (30000-32767) as kube-apiserver 1.36 does:
// random picks from the upper part of each range, requested values honoured
// or refused with upstream's messages, values given back when a Service is
// deleted.
//
// The Services in etcd are the source of truth: the allocators are rebuilt
// from them when the API server starts (so allocations survive a restart
// with the same data dir), and Repair, run periodically as upstream's
// repair controllers run, frees values no stored Service holds (a failed or
// dry-run write, a node port dropped by an update) and re-marks values that
// stored Services hold.
package servicealloc

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"
)

// The cluster's service ranges: kube-apiserver's --service-cluster-ip-range
// as kubeadm sets it, and the default --service-node-port-range.
const (
	ServiceCIDR   = "10.96.0.0/12"
	NodePortFirst = 30000
	NodePortLast  = 32767
	// KubernetesServiceIP is the range's first address, which the API server
	// gives its own "kubernetes" Service in namespace default.
	KubernetesServiceIP = "10.96.0.1"
)

// Allocators allocate cluster IPs and node ports. They are safe for
// concurrent use.
type Allocators struct {
	mu    sync.Mutex
	ips   *ipRange
	ports *portRange
	clock clock.PassiveClock
	// since records when a value was allocated for a write, so Repair does
	// not free it while that write may still be on its way to etcd.
	since map[string]time.Time
}

// New returns empty allocators for ServiceCIDR and the node port range.
func New(clk clock.PassiveClock) *Allocators {
	if clk == nil {
		clk = clock.RealClock{}
	}
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x5e41ce))
	ips, err := newIPRange(ServiceCIDR, r)
	if err != nil {
		panic(err)
	}
	return &Allocators{ips: ips, ports: newPortRange(NodePortFirst, NodePortLast-NodePortFirst+1, r),
		clock: clk, since: map[string]time.Time{}}
}

func ipKey(ip net.IP) string { return "ip/" + ip.String() }
func portKey(p int) string   { return "port/" + strconv.Itoa(p) }

// Allocate gives svc the cluster IP and node ports it needs that old (nil on
// create) does not already hold: the requested ones when set, new ones
// otherwise. On error nothing stays allocated.
func (a *Allocators) Allocate(svc, old *corev1.Service) field.ErrorList {
	a.mu.Lock()
	defer a.mu.Unlock()
	var done []string
	undo := func(errs field.ErrorList) field.ErrorList {
		for _, k := range done {
			a.releaseKey(k)
		}
		return errs
	}
	if NeedsClusterIP(svc) && (old == nil || !NeedsClusterIP(old)) {
		key, errs := a.allocClusterIP(svc)
		if len(errs) > 0 {
			return errs
		}
		if key != "" {
			done = append(done, key)
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
	keys, errs := a.allocNodePorts(svc, held)
	done = append(done, keys...)
	if len(errs) > 0 {
		return undo(errs)
	}
	if NeedsHealthCheck(svc) && (old == nil || !NeedsHealthCheck(old)) {
		key, errs := a.allocHealthCheckNodePort(svc)
		if len(errs) > 0 {
			return undo(errs)
		}
		done = append(done, key)
	}
	now := a.clock.Now()
	for _, k := range done {
		a.since[k] = now
	}
	return nil
}

func (a *Allocators) allocClusterIP(svc *corev1.Service) (string, field.ErrorList) {
	path := field.NewPath("spec", "clusterIPs")
	switch svc.Spec.ClusterIP {
	case corev1.ClusterIPNone:
		return "", nil
	case "":
		ip, err := a.ips.next()
		if err != nil {
			return "", field.ErrorList{field.InternalError(path,
				fmt.Errorf("failed to allocate a serviceIP for Service %q: %w", svc.Name, err))}
		}
		svc.Spec.ClusterIP, svc.Spec.ClusterIPs = ip.String(), []string{ip.String()}
		return ipKey(ip), nil
	}
	ip := net.ParseIP(svc.Spec.ClusterIP)
	if ip == nil {
		return "", field.ErrorList{field.InternalError(path, fmt.Errorf("failed to parse service IP %q", svc.Spec.ClusterIP))}
	}
	if err := a.ips.allocate(ip); err != nil {
		return "", field.ErrorList{field.Invalid(path, svc.Spec.ClusterIPs,
			fmt.Sprintf("failed to allocate IP %v: %v", svc.Spec.ClusterIP, err))}
	}
	return ipKey(ip), nil
}

// allocNodePorts is upstream's initNodePorts: ports sharing a port number
// share a node port; requested node ports are honoured even when the type
// allocates none; held ones (the old object's) are kept without allocating.
func (a *Allocators) allocNodePorts(svc *corev1.Service, held map[int]bool) ([]string, field.ErrorList) {
	var keys []string
	take := func(np int) error {
		if held[np] {
			return nil
		}
		if err := a.ports.allocate(np); err != nil {
			return err
		}
		held[np] = true
		keys = append(keys, portKey(np))
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
					return keys, field.ErrorList{field.Invalid(path, np, err.Error())}
				}
			} else {
				next, err := a.ports.next()
				if err != nil {
					return keys, field.ErrorList{field.InternalError(path, fmt.Errorf("failed to allocate a nodePort: %w", err))}
				}
				keys = append(keys, portKey(next))
				np = int32(next)
			}
			sp.NodePort = np
			byPort[sp.Port] = np
		case sp.NodePort == 0:
			sp.NodePort = shared
		case sp.NodePort != shared:
			if err := take(int(sp.NodePort)); err != nil {
				return keys, field.ErrorList{field.Invalid(path, sp.NodePort, err.Error())}
			}
		}
	}
	return keys, nil
}

// allocHealthCheckNodePort reserves the requested health check node port,
// or allocates one. Upstream answers its failures with a 500; here they are
// field errors of type InternalError.
func (a *Allocators) allocHealthCheckNodePort(svc *corev1.Service) (string, field.ErrorList) {
	path := field.NewPath("spec", "healthCheckNodePort")
	if hc := int(svc.Spec.HealthCheckNodePort); hc != 0 {
		if err := a.ports.allocate(hc); err != nil {
			return "", field.ErrorList{field.InternalError(path, fmt.Errorf("failed to allocate requested HealthCheck NodePort %v: %v", hc, err))}
		}
		return portKey(hc), nil
	}
	hc, err := a.ports.next()
	if err != nil {
		return "", field.ErrorList{field.InternalError(path, fmt.Errorf("failed to allocate a HealthCheck NodePort %v: %v", hc, err))}
	}
	svc.Spec.HealthCheckNodePort = int32(hc)
	return portKey(hc), nil
}

func requestedNodePort(port int32, ports []corev1.ServicePort) int32 {
	for _, p := range ports {
		if p.Port == port && p.NodePort != 0 {
			return p.NodePort
		}
	}
	return 0
}

// Release gives back svc's cluster IP and node ports (the Service was
// deleted, or its write failed).
func (a *Allocators) Release(svc *corev1.Service) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, k := range heldKeys(svc) {
		a.releaseKey(k)
	}
}

func (a *Allocators) releaseKey(k string) {
	delete(a.since, k)
	if ip, ok := cutPrefix(k, "ip/"); ok {
		a.ips.release(net.ParseIP(ip))
	} else if p, ok := cutPrefix(k, "port/"); ok {
		n, _ := strconv.Atoi(p)
		a.ports.release(n)
	}
}

func cutPrefix(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && s[:len(prefix)] == prefix {
		return s[len(prefix):], true
	}
	return "", false
}

// heldKeys lists the values a stored Service holds.
func heldKeys(svc *corev1.Service) []string {
	var keys []string
	for _, s := range svc.Spec.ClusterIPs {
		if ip := net.ParseIP(s); ip != nil {
			keys = append(keys, ipKey(ip))
		}
	}
	if len(svc.Spec.ClusterIPs) == 0 {
		if ip := net.ParseIP(svc.Spec.ClusterIP); ip != nil {
			keys = append(keys, ipKey(ip))
		}
	}
	for _, p := range svc.Spec.Ports {
		if p.NodePort != 0 {
			keys = append(keys, portKey(int(p.NodePort)))
		}
	}
	if svc.Spec.HealthCheckNodePort != 0 {
		keys = append(keys, portKey(int(svc.Spec.HealthCheckNodePort)))
	}
	return keys
}

// Repair makes the allocators agree with services, the Services stored in
// etcd as listed at listedAt: every value they hold is marked allocated,
// and values none holds are freed unless allocated for a write after
// listedAt-grace. At start, Repair with the stored Services rebuilds the
// allocators.
func (a *Allocators) Repair(services []*corev1.Service, listedAt time.Time, grace time.Duration) {
	held := map[string]bool{}
	for _, s := range services {
		for _, k := range heldKeys(s) {
			held[k] = true
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for k := range held {
		if ip, ok := cutPrefix(k, "ip/"); ok {
			_ = a.ips.allocate(net.ParseIP(ip)) // out of range (a changed CIDR): ignored, as upstream reports and keeps it
		} else if p, ok := cutPrefix(k, "port/"); ok {
			n, _ := strconv.Atoi(p)
			_ = a.ports.allocate(n)
		}
	}
	cutoff := listedAt.Add(-grace)
	for _, k := range a.allocatedKeys() {
		if held[k] {
			delete(a.since, k)
			continue
		}
		if t, ok := a.since[k]; ok && t.After(cutoff) {
			continue
		}
		a.releaseKey(k)
	}
}

// allocatedKeys lists every value currently allocated.
func (a *Allocators) allocatedKeys() []string {
	var keys []string
	for i := 0; i < a.ips.bits.size; i += 64 {
		if a.ips.bits.used[i/64] == 0 {
			continue
		}
		for j := i; j < min(i+64, a.ips.bits.size); j++ {
			if a.ips.bits.has(j) {
				keys = append(keys, ipKey(a.ips.ip(j)))
			}
		}
	}
	for j := 0; j < a.ports.size; j++ {
		if a.ports.bits.has(j) {
			keys = append(keys, portKey(a.ports.base+j))
		}
	}
	return keys
}

// Allocated reports whether the cluster IP or node port is allocated.
func (a *Allocators) Allocated(ipOrPort string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n, err := strconv.Atoi(ipOrPort); err == nil {
		i := n - a.ports.base
		return i >= 0 && i < a.ports.size && a.ports.bits.has(i)
	}
	i, err := a.ips.index(net.ParseIP(ipOrPort))
	return err == nil && a.ips.bits.has(i)
}
