package proc

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// ipChanges are the ip commands, by object, in the order of busybox's
// keyword lists (networking/libiproute: ipaddress.c's "add change chg
// replace delete list show lst flush", iproute.c's, iplink.c's), whose
// abbreviations match the first keyword they begin. All but shows change
// the network namespace and need CAP_NET_ADMIN.
var ipChanges = []struct {
	object   string
	commands []string
	shows    []string // the commands that only show
}{
	{"address", []string{"add", "change", "chg", "replace", "delete", "list", "show", "lst", "flush"}, []string{"list", "show", "lst"}},
	{"route", []string{"add", "append", "change", "chg", "delete", "prepend", "replace", "flush", "get", "list", "show", "test"}, []string{"get", "list", "show", "test"}},
	{"link", []string{"add", "delete", "set", "show", "lst", "list"}, []string{"show", "lst", "list"}},
}

// ipChange runs the ip commands (busybox's ip applet) that change the
// container's network: `ip link add dummy0 type dummy`, `ip addr add`,
// `ip route replace`, `ip link set eth0 mtu 1400`, .... With
// CAP_NET_ADMIN (a privileged container's, or one added to a container
// running as root) they succeed silently; without it the kernel refuses
// them: ip prints netlink's answer, or for `ip link set` the refused
// ioctl's (ipLinkSet), and exits 2 (flush: 1). What they change is not simulated
// (nothing shows it), and ip's other commands (show, list, get) are not
// simulated: ok is false for them.
func ipChange(stderr io.Writer, sec Security, uid int64, args []string) (code int, ok bool) {
	for len(args) > 0 && strings.HasPrefix(args[0], "-") { // -4, -6, -o, ...
		args = args[1:]
	}
	if len(args) < 2 {
		return 0, false
	}
	for _, obj := range ipChanges {
		if !strings.HasPrefix(obj.object, args[0]) {
			continue
		}
		for _, cmd := range obj.commands {
			if !strings.HasPrefix(cmd, args[1]) {
				continue
			}
			switch {
			case slices.Contains(obj.shows, cmd):
				return 0, false
			case sec.hasCap(uid, "NET_ADMIN"):
				return 0, true
			case obj.object == "link" && cmd == "set":
				return ipLinkSet(stderr, args[2:]), true
			case cmd == "flush": // a pod's eth0 has an address to flush
				fmt.Fprintln(stderr, "ip: can't send flush request: Operation not permitted")
				return 1, true
			}
			fmt.Fprintln(stderr, "ip: RTNETLINK answers: Operation not permitted")
			return 2, true
		}
		return 0, false
	}
	return 0, false
}

// ipLinkSet answers `ip link set DEV ...` without CAP_NET_ADMIN as
// busybox's do_set does: it changes the device with ioctls, not netlink,
// in its order (name, mtu, then flags), and dies on the first the kernel
// refuses with "ip: SIOCS...: Operation not permitted", exit 2. It changes
// the flags only when they differ: a pod's devices (lo, eth0) are up, so
// `up` alone succeeds.
func ipLinkSet(stderr io.Writer, args []string) int {
	var name, mtu, flags bool
	for _, arg := range args {
		switch arg {
		case "name":
			name = true
		case "mtu":
			mtu = true
		case "down", "arp", "multicast", "promisc", "allmulticast", "dynamic", "trailers":
			flags = true
		}
	}
	ioctl := ""
	switch {
	case name:
		ioctl = "SIOCSIFNAME"
	case mtu:
		ioctl = "SIOCSIFMTU"
	case flags:
		ioctl = "SIOCSIFFLAGS"
	default:
		return 0
	}
	fmt.Fprintf(stderr, "ip: %s: Operation not permitted\n", ioctl)
	return 2
}
