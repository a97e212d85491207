package containerd

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/vishvananda/netlink"
)

// ownerAlias marks the bridges podtrace makes with the process that owns them.
const ownerAlias = "podtrace pid "

// makeBridge creates the node's bridge before its CNI plugin would, so
// that it carries its owner: the bridge plugin then takes it as it is.
// A route that already covers part of podCIDR (another cluster's bridge,
// or a real network) fails it: the bridge would take that traffic. A
// podtrace bridge whose owner is gone (it did not stop cleanly) is removed.
func makeBridge(name, podCIDR string) error {
	_, want, err := net.ParseCIDR(podCIDR)
	if err != nil {
		return err
	}
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
	if err := deleteBridge(name); err != nil {
		return err
	}
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: name}}
	if err := netlink.LinkAdd(br); err != nil {
		return fmt.Errorf("create bridge %s: %w", name, err)
	}
	if err := netlink.LinkSetAlias(br, ownerAlias+strconv.Itoa(os.Getpid())); err != nil {
		return err
	}
	return netlink.LinkSetUp(br)
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
