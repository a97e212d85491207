package proc

import (
	"bytes"
	"testing"
)

// TestPrivileges runs what the Security Context specs run
// (k8s.io/kubernetes test/e2e/common/node/security_context.go): busybox's
// `ip link add`, which needs CAP_NET_ADMIN, and the nonewprivs image's nnp.
func TestPrivileges(t *testing.T) {
	const nonewprivs = "registry.k8s.io/e2e-test-images/nonewprivs:1.4"
	const ipLinkAdd = "ip link add dummy0 type dummy || true"
	for _, tc := range []struct {
		name           string
		image, script  string
		uid            int64
		sec            Security
		stdout, stderr string
	}{
		{"unprivileged", "busybox", ipLinkAdd, 0, Security{}, "", "ip: RTNETLINK answers: Operation not permitted\n"},
		{"privileged", "busybox", ipLinkAdd, 0, Security{Privileged: true}, "", ""},
		{"NET_ADMIN added", "busybox", ipLinkAdd, 0, Security{AddCaps: []string{"NET_ADMIN"}}, "", ""},
		{"ALL added, NET_ADMIN dropped", "busybox", ipLinkAdd, 0, Security{AddCaps: []string{"ALL"}, DropCaps: []string{"NET_ADMIN"}}, "", "ip: RTNETLINK answers: Operation not permitted\n"},
		{"privileged, not root", "busybox", ipLinkAdd, 1000, Security{Privileged: true}, "", "ip: RTNETLINK answers: Operation not permitted\n"},
		{"exit status", "busybox", "ip -4 route replace default via 10.0.0.1; echo $?", 0, Security{}, "2\n", "ip: RTNETLINK answers: Operation not permitted\n"},
		// busybox's ip link set uses ioctls (outputs of busybox 1.35 as nobody).
		{"link set down", "busybox", "ip link set eth0 down; echo $?", 0, Security{}, "2\n", "ip: SIOCSIFFLAGS: Operation not permitted\n"},
		{"link set up, already up", "busybox", "ip link set dev lo up; echo $?", 0, Security{}, "0\n", ""},
		{"link set mtu", "busybox", "ip link set eth0 mtu 1400 up; echo $?", 0, Security{}, "2\n", "ip: SIOCSIFMTU: Operation not permitted\n"},
		{"link set mtu, privileged", "busybox", "ip link set eth0 mtu 1400; echo $?", 0, Security{Privileged: true}, "0\n", ""},
		{"addr flush", "busybox", "ip addr flush dev eth0; echo $?", 0, Security{}, "1\n", "ip: can't send flush request: Operation not permitted\n"},
		// nnp is set-user-ID root: it runs as root unless no_new_privs.
		{"escalation allowed", nonewprivs, "nnp", 1000, Security{}, "Effective uid: 0\n", ""},
		{"escalation refused", nonewprivs, "nnp", 1000, Security{NoNewPrivs: true}, "Effective uid: 1000\n", ""},
		{"escalation refused, root", nonewprivs, "nnp", 0, Security{NoNewPrivs: true}, "Effective uid: 0\n", ""},
	} {
		var out, errw bytes.Buffer
		code, err := Run(t.Context(), Process{Argv: []string{"sh", "-c", tc.script}, FS: container(t), Image: tc.image,
			UID: tc.uid, Security: tc.sec, Stdout: &out, Stderr: &errw})
		if err != nil || code != 0 || out.String() != tc.stdout || errw.String() != tc.stderr {
			t.Errorf("%s: %q: exit %d (%v), stdout %q, stderr %q; want 0, %q, %q", tc.name, tc.script, code, err, out.String(), errw.String(), tc.stdout, tc.stderr)
		}
	}
}

func TestIPShowIsNotSimulated(t *testing.T) {
	for _, args := range [][]string{{"addr"}, {"a", "show"}, {"route", "get", "1.1.1.1"}, {"link", "list"}, {"addr", "s"}, {"neigh", "add"}} {
		if _, ok := ipChange(&bytes.Buffer{}, Security{}, 0, args); ok {
			t.Errorf("ip %q: simulated, want not", args)
		}
	}
}
