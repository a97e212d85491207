// Package ipam is the simulated runtime's pod network: a host-local style
// IPAM that hands out addresses from one node's pod CIDR. It touches no real
// interface.
package ipam

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
)

// Plugin is a simulated bridge + host-local CNI plugin for one node.
type Plugin struct {
	prefix  netip.Prefix
	gateway netip.Addr
	first   netip.Addr // first address of the range
	last    netip.Addr // last usable address of the range

	mu     sync.Mutex
	inUse  map[netip.Addr]string // address → sandbox ID
	bySand map[string]netip.Addr
	lastIP netip.Addr // last address handed out; allocation continues after it
}

// New returns a plugin allocating from cidr (e.g. "10.244.1.0/24").
func New(cidr string) (*Plugin, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil, fmt.Errorf("pod CIDR %q: %w", cidr, err)
	}
	p = p.Masked()
	if !p.Addr().Is4() || p.Bits() > 30 {
		return nil, fmt.Errorf("pod CIDR %q: want an IPv4 prefix of /30 or larger", cidr)
	}
	first := p.Addr().Next()
	last := broadcast(p).Prev()
	return &Plugin{prefix: p, gateway: first, first: first, last: last,
		inUse: map[netip.Addr]string{}, bySand: map[string]netip.Addr{}, lastIP: first}, nil
}

func broadcast(p netip.Prefix) netip.Addr {
	a := p.Addr().As4()
	host := uint32(1)<<(32-p.Bits()) - 1
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3]) | host
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// RangeSet returns the range as host-local prints it, e.g. "10.244.1.1-10.244.1.254".
func (pl *Plugin) RangeSet() string { return pl.first.String() + "-" + pl.last.String() }

// Gateway returns the bridge address, the first of the range.
func (pl *Plugin) Gateway() string { return pl.gateway.String() }

// InUse returns how many addresses are allocated.
func (pl *Plugin) InUse() int {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return len(pl.inUse)
}

// SetUp allocates the next free address after the last one handed out (as
// host-local does). When the range is full it fails with host-local's error.
func (pl *Plugin) SetUp(_ context.Context, pod Pod) (Result, error) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if ip, ok := pl.bySand[pod.SandboxID]; ok {
		return pl.result(pod, ip), nil
	}
	ip := pl.lastIP
	for {
		ip = ip.Next()
		if !pl.prefix.Contains(ip) || ip.Compare(pl.last) > 0 {
			ip = pl.first
		}
		if ip != pl.gateway {
			if _, used := pl.inUse[ip]; !used {
				break
			}
		}
		if ip == pl.lastIP {
			return Result{}, fmt.Errorf("plugin type=%q name=%q failed (add): failed to allocate for range 0: no IP addresses available in range set: %s",
				"bridge", "podtrace", pl.RangeSet())
		}
	}
	pl.inUse[ip] = pod.SandboxID
	pl.bySand[pod.SandboxID] = ip
	pl.lastIP = ip
	return pl.result(pod, ip), nil
}

func (pl *Plugin) result(pod Pod, ip netip.Addr) Result {
	id := pod.SandboxID
	if len(id) > 8 {
		id = id[:8]
	}
	return Result{Interface: "eth0", IP: ip.String(), Gateway: pl.gateway.String(), HostVeth: "veth" + id}
}

// TearDown releases the sandbox's address.
func (pl *Plugin) TearDown(_ context.Context, pod Pod) error {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if ip, ok := pl.bySand[pod.SandboxID]; ok {
		delete(pl.inUse, ip)
		delete(pl.bySand, pod.SandboxID)
	}
	return nil
}

// Pod identifies the pod and sandbox a network operation is for.
type Pod struct {
	Namespace, Name, UID string
	SandboxID            string
}

// Result is what CNI ADD reports.
type Result struct {
	// Interface is the pod-side interface name, "eth0".
	Interface string
	// IP is the pod's address; Gateway its route.
	IP, Gateway string
	// HostVeth is the host side of the veth pair.
	HostVeth string
}
