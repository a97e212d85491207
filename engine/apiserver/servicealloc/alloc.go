// Package servicealloc hands out Services' cluster IPs (service CIDR
// 10.96.0.0/12) and node ports (30000-32767) as kube-apiserver 1.36 does:
// random picks from the upper part of each range, requested values honoured
// or refused with upstream's messages. Each write allocates in a
// transaction (Begin) that the write path commits once the Service is
// stored, giving back what an update dropped, or reverts when it is not; a
// dry run allocates nothing. Release gives a deleted Service's values back.
//
// The Services in etcd are the source of truth: the allocators are rebuilt
// from them when the API server starts (so allocations survive a restart
// with the same data dir), and Repair, run periodically as upstream's
// repair controllers run, frees values no stored Service holds (lost by a
// crash between allocation and the end of its write) and re-marks values
// that stored Services hold.
package servicealloc

import (
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
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

// Release gives back svc's cluster IP and node ports (the Service was
// deleted, or its write failed).
func (a *Allocators) Release(svc *corev1.Service) { a.releaseKeys(heldKeys(svc)) }

func (a *Allocators) releaseKeys(keys []string) {
	if len(keys) == 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.releaseKeysLocked(keys)
}

func (a *Allocators) releaseKeysLocked(keys []string) {
	for _, k := range keys {
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
		return a.ports.has(n)
	}
	i, err := a.ips.index(net.ParseIP(ipOrPort))
	return err == nil && a.ips.bits.has(i)
}
