package containerd

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/vishvananda/netlink"
)

// ownerAlias marks the bridges podtrace makes with the process that owns them.
const ownerAlias = "podtrace pid "

// makeBridge creates the node's bridge before its CNI plugin would, so
// that it carries its owner, and gives it the pods' gateway address
// (host-local's default, the range's first), which the bridge plugin then
// finds as it would have set it: node-local services (cluster DNS,
// NodePorts) can listen there before the first pod. Bridged traffic goes
// through the host's netfilter hooks on this bridge (its nf_call_iptables,
// what br_netfilter's bridge-nf-call-iptables sysctl does for every bridge
// and Kubernetes asks of a bridge plugin), so that kube-proxy's rules see
// a pod's reply to a pod on the same bridge that reached it through a
// ClusterIP. A route that already covers part of podCIDR (another
// cluster's bridge, or a real network) fails it: the bridge would take
// that traffic. A podtrace bridge whose owner is gone (it did not stop
// cleanly) is removed.
func makeBridge(name, podCIDR string) (gateway net.IP, err error) {
	_, want, err := net.ParseCIDR(podCIDR)
	if err != nil {
		return nil, err
	}
	if err := checkRoutes(want, podCIDR); err != nil {
		return nil, err
	}
	if err := deleteBridge(name); err != nil {
		return nil, err
	}
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: name}}
	if err := netlink.LinkAdd(br); err != nil {
		return nil, fmt.Errorf("create bridge %s: %w", name, err)
	}
	if err := netlink.LinkSetAlias(br, ownerAlias+strconv.Itoa(os.Getpid())); err != nil {
		return nil, err
	}
	gw := Gateway(want)
	if err := netlink.AddrAdd(br, &netlink.Addr{IPNet: &net.IPNet{IP: gw, Mask: want.Mask}}); err != nil {
		return nil, fmt.Errorf("bridge %s: address %s: %w", name, gw, err)
	}
	// Without br_netfilter loaded the setting waits for it (kube-proxy
	// then masquerades, see engine/upstream).
	if err := os.WriteFile(filepath.Join("/sys/class/net", name, "bridge", "nf_call_iptables"), []byte("1"), 0o644); err != nil {
		return nil, fmt.Errorf("bridge %s: %w", name, err)
	}
	return gw, netlink.LinkSetUp(br)
}

// checkRoutes fails if a route other than an orphaned podtrace bridge's
// covers part of want; it removes those orphans.
func checkRoutes(want *net.IPNet, podCIDR string) error {
	routes, err := netlink.RouteList(nil, netlink.FAMILY_V4)
	if err != nil {
		return err
	}
	for _, r := range routes {
		if r.Dst == nil || r.Dst.IP.IsUnspecified() || (!r.Dst.Contains(want.IP) && !want.Contains(r.Dst.IP)) {
			continue
		}
		if l, err := netlink.LinkByIndex(r.LinkIndex); err == nil && orphaned(l) {
			if err := netlink.LinkDel(l); err != nil {
				return err
			}
			continue
		}
		return fmt.Errorf("pod range %s overlaps the route to %s on this machine (another podtrace with --runtime containerd?)", podCIDR, r.Dst)
	}
	return nil
}

// orphaned reports whether l is a podtrace bridge whose owner has exited.
func orphaned(l netlink.Link) bool {
	pid, err := strconv.Atoi(strings.TrimPrefix(l.Attrs().Alias, ownerAlias))
	if l.Type() != "bridge" || !strings.HasPrefix(l.Attrs().Alias, ownerAlias) || err != nil {
		return false
	}
	return syscall.Kill(pid, 0) == syscall.ESRCH
}

// deleteBridge removes the bridge a node's pods used, if it is there.
func deleteBridge(name string) error {
	l, err := netlink.LinkByName(name)
	var notFound netlink.LinkNotFoundError
	if errors.As(err, &notFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return netlink.LinkDel(l)
}
