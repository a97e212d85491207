package proc

import (
	"fmt"
	"io"
	"strings"
)

// ipChanges are the ip commands, by object, that change the network
// namespace (a netlink request that needs CAP_NET_ADMIN), in the order of
// busybox's keyword lists, whose abbreviations match the first keyword
// they begin.
var ipChanges = []struct {
	object   string
	commands []string
	changes  int // the first len(changes) commands change; the rest show
}{
	{"address", []string{"add", "change", "chg", "replace", "delete", "flush", "list", "save", "show", "lst"}, 6},
	{"route", []string{"add", "append", "change", "chg", "delete", "prepend", "replace", "flush", "get", "list", "show", "test"}, 8},
	{"link", []string{"add", "delete", "set", "show", "lst", "list"}, 3},
}

// ipChange runs the ip commands (busybox's ip applet) that change the
// container's network: `ip link add dummy0 type dummy`, `ip addr add`,
// `ip route replace`, .... With CAP_NET_ADMIN (a privileged container's,
// or one added to a container running as root) they succeed silently;
// without it the kernel refuses them and ip prints netlink's answer and
// exits 2. What they change is not simulated (nothing shows it), and ip's
// other commands (show, list, get) are not simulated: ok is false for
// them.
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
		for i, cmd := range obj.commands {
			if strings.HasPrefix(cmd, args[1]) {
				if i >= obj.changes {
					return 0, false
				}
				if !sec.hasCap(uid, "NET_ADMIN") {
					fmt.Fprintln(stderr, "ip: RTNETLINK answers: Operation not permitted")
					return 2, true
				}
				return 0, true
			}
		}
		return 0, false
	}
	return 0, false
}
