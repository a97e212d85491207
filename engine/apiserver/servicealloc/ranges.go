package servicealloc

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
)

// ipRange allocates the addresses of an IPv4 service CIDR, the network
// and broadcast addresses excluded, as upstream's bitmap ipallocator.
type ipRange struct {
	cidr *net.IPNet
	base uint32 // the first usable address (network + 1)
	bits *bitmap
}

func newIPRange(cidr string, r *rand.Rand) (*ipRange, error) {
	_, n, err := net.ParseCIDR(cidr)
	if err != nil || n.IP.To4() == nil {
		return nil, fmt.Errorf("servicealloc: %q is not an IPv4 CIDR", cidr)
	}
	ones, total := n.Mask.Size()
	size := (1 << (total - ones)) - 2
	if size < 1 {
		return nil, fmt.Errorf("servicealloc: %q is too small", cidr)
	}
	return &ipRange{cidr: n, base: binary.BigEndian.Uint32(n.IP.To4()) + 1,
		bits: newBitmap(size, rangeOffset(size, 16, 256, 16), r)}, nil
}

// errNotInRange is upstream's ErrNotInRange for an address.
func (r *ipRange) errNotInRange(ip net.IP) error {
	return fmt.Errorf("the provided IP (%v) is not in the valid range. The range of valid IPs is %s", ip, r.cidr)
}

// index returns the bitmap offset of ip, or an error when it is outside the range.
func (r *ipRange) index(ip net.IP) (int, error) {
	v4 := ip.To4()
	if v4 == nil || !r.cidr.Contains(v4) {
		return 0, r.errNotInRange(ip)
	}
	i := int(binary.BigEndian.Uint32(v4)) - int(r.base)
	if i < 0 || i >= r.bits.size { // network or broadcast address
		return 0, r.errNotInRange(ip)
	}
	return i, nil
}

func (r *ipRange) ip(i int) net.IP {
	out := make(net.IP, 4)
	binary.BigEndian.PutUint32(out, r.base+uint32(i))
	return out
}

func (r *ipRange) allocate(ip net.IP) error {
	i, err := r.index(ip)
	if err != nil {
		return err
	}
	if !r.bits.set(i) {
		return errIPAllocated
	}
	return nil
}

func (r *ipRange) next() (net.IP, error) {
	i, err := r.bits.next()
	if err != nil {
		return nil, err
	}
	return r.ip(i), nil
}

func (r *ipRange) release(ip net.IP) {
	if i, err := r.index(ip); err == nil {
		r.bits.release(i)
	}
}

// portRange allocates node ports, as upstream's portallocator.
type portRange struct {
	base, size int
	bits       *bitmap
}

func newPortRange(base, size int, r *rand.Rand) *portRange {
	return &portRange{base: base, size: size, bits: newBitmap(size, rangeOffset(size, 16, 128, 32), r)}
}

func (p *portRange) String() string { return fmt.Sprintf("%d-%d", p.base, p.base+p.size-1) }

func (p *portRange) allocate(port int) error {
	i := port - p.base
	if i < 0 || i >= p.size {
		return fmt.Errorf("provided port is not in the valid range. The range of valid ports is %s", p)
	}
	if !p.bits.set(i) {
		return errPortAllocated
	}
	return nil
}

func (p *portRange) next() (int, error) {
	i, err := p.bits.next()
	if err != nil {
		return 0, err
	}
	return p.base + i, nil
}

func (p *portRange) has(port int) bool {
	i := port - p.base
	return i >= 0 && i < p.size && p.bits.has(i)
}

func (p *portRange) release(port int) { p.bits.release(port - p.base) }
