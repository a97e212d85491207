package agnhost

import (
	"fmt"
	"io"
	"strings"

	"github.com/podtrace/podtrace/engine/cri/sim/proc"
)

// etcHosts is agnhost etc-hosts (test/images/agnhost/dns): it prints the
// container's /etc/hosts (the kubelet's, with the pod's hostAliases) with
// a line break after it, and panics as Go does when it cannot read it. It
// returns the exit status.
func etcHosts(fsys *proc.FS, out, errw io.Writer) int {
	b, err := fsys.ReadFile("/etc/hosts")
	if err != nil {
		fmt.Fprintf(errw, "panic: open /etc/hosts: %s\n\ngoroutine 1 [running]:\nk8s.io/kubernetes/test/images/agnhost/dns.readFile(...)\n", strings.ToLower(proc.Reason(err)))
		return 2
	}
	fmt.Fprintln(out, string(b))
	return 0
}
