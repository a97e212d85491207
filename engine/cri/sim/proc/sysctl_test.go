package proc

import (
	"bytes"
	"testing"
)

// TestSysctl runs busybox's sysctl as the Sysctls specs
// (k8s.io/kubernetes test/e2e/common/node/sysctl.go) and scripts do, in a
// pod with kernel.shm_rmid_forced=1.
func TestSysctl(t *testing.T) {
	pod := map[string]string{"kernel.shm_rmid_forced": "1", "net.ipv4.ip_local_port_range": "1024 65535",
		"net.ipv4.conf.eth0.100.mc_forwarding": "0"}
	for _, tc := range []struct {
		name           string
		script         string
		uid            int64
		privileged     bool
		code           int
		stdout, stderr string
	}{
		{"the spec's", "/bin/sysctl kernel.shm_rmid_forced", 0, false, 0, "kernel.shm_rmid_forced = 1\n", ""},
		{"slashes", "sysctl kernel/shm_rmid_forced", 0, false, 0, "kernel.shm_rmid_forced = 1\n", ""},
		{"-n", "sysctl -n kernel.shm_rmid_forced net.ipv4.tcp_syncookies", 0, false, 0, "1\n1\n", ""},
		{"a node default", "sysctl kernel.shmmni", 0, false, 0, "kernel.shmmni = 4096\n", ""},
		{"a vector, tab-separated", "sysctl net.ipv4.ip_local_port_range", 0, false, 0, "net.ipv4.ip_local_port_range = 1024\t65535\n", ""},
		{"a dotted interface name", "sysctl net.ipv4.conf.eth0.100.mc_forwarding", 0, false, 0, "net.ipv4.conf.eth0.100.mc_forwarding = 0\n", ""},
		{"the file", "cat /proc/sys/kernel/shm_rmid_forced", 0, false, 0, "1\n", ""},
		{"a directory", "sysctl -n net.ipv4.tcp_keepalive_intvl net.ipv4.conf", 0, false, 0, "75\n0\n", ""},
		{"unknown", "sysctl kernel.nope; echo $?", 0, false, 0, "1\n", "sysctl: error: 'kernel.nope' is an unknown key\n"},
		{"unknown, -e", "sysctl -e kernel.nope", 0, false, 1, "", ""},
		{"-w unprivileged", "sysctl -w kernel.shm_rmid_forced=0", 0, false, 1, "", "sysctl: error setting key 'kernel.shm_rmid_forced': Read-only file system\n"},
		{"NAME=VALUE writes", "sysctl kernel.shm_rmid_forced=0", 0, false, 1, "", "sysctl: error setting key 'kernel.shm_rmid_forced': Read-only file system\n"},
		{"echo unprivileged", "echo 0 > /proc/sys/kernel/shm_rmid_forced", 0, false, 1, "", "sh: can't create /proc/sys/kernel/shm_rmid_forced: Read-only file system\n"},
		{"-w privileged", "sysctl -w kernel.shm_rmid_forced=0 && sysctl -n kernel.shm_rmid_forced", 0, true, 0, "kernel.shm_rmid_forced = 0\n0\n", ""},
		{"-w privileged, not root", "sysctl -w kernel.shm_rmid_forced=0", 1000, true, 1, "", ""},
		{"a refused write changes nothing", "sysctl -w kernel.shm_rmid_forced=0; sysctl -n kernel.shm_rmid_forced", 1000, true, 0, "1\n", ""},
		{"-w unknown, privileged", "sysctl -w kernel.nope=1", 0, true, 1, "", "sysctl: error: 'kernel.nope' is an unknown key\n"},
		{"-w without a value", "sysctl -w kernel.shm_rmid_forced", 0, true, 1, "", "sysctl: error: 'kernel.shm_rmid_forced' must be of the form name=value\n"},
		{"-q", "sysctl -q -w kernel.shm_rmid_forced=0", 0, true, 0, "", ""},
		{"-p", "printf '# c\\nkernel.shm_rmid_forced = 0\\n' > /tmp/s.conf; sysctl -p /tmp/s.conf", 0, true, 0, "kernel.shm_rmid_forced = 0\n", ""},
		{"bad option", "sysctl -x kernel.shmmni", 0, false, 1, "", "sysctl: invalid option -- 'x'\n"},
	} {
		var out, errw bytes.Buffer
		fsys := container(t).WithSysctls(pod, tc.privileged)
		code, err := Run(t.Context(), Process{Argv: []string{"sh", "-c", tc.script}, FS: fsys, UID: tc.uid,
			Security: Security{Privileged: tc.privileged}, Stdout: &out, Stderr: &errw})
		if err != nil || code != tc.code || out.String() != tc.stdout || errw.String() != tc.stderr {
			t.Errorf("%s: %q: exit %d (%v), stdout %q, stderr %q; want %d, %q, %q", tc.name, tc.script, code, err, out.String(), errw.String(), tc.code, tc.stdout, tc.stderr)
		}
	}
}

// TestSysctlAll lists every parameter with -a, each once, under its
// dotted name.
func TestSysctlAll(t *testing.T) {
	var out bytes.Buffer
	fsys := container(t).WithSysctls(map[string]string{"kernel.shm_rmid_forced": "1"}, false)
	code, err := Run(t.Context(), Process{Argv: []string{"sysctl", "-a"}, FS: fsys, Stdout: &out})
	if err != nil || code != 0 {
		t.Fatalf("sysctl -a: exit %d (%v)", code, err)
	}
	if n := bytes.Count(out.Bytes(), []byte("\n")); n != len(sysctlDefaults) {
		t.Errorf("sysctl -a printed %d lines, want %d:\n%s", n, len(sysctlDefaults), out.String())
	}
	for _, want := range []string{"kernel.shm_rmid_forced = 1\n", "net.core.somaxconn = 4096\n", "net.ipv4.ip_local_reserved_ports = \n"} {
		if !bytes.Contains(out.Bytes(), []byte(want)) {
			t.Errorf("sysctl -a lacks %q:\n%s", want, out.String())
		}
	}
}

// TestProcSysWritable writes a sysctl's file as root: /proc/sys is
// writable exactly when the container is privileged, whether or not its
// root file system is read-only (runc mounts /proc on its own and
// containerd makes /proc/sys read-only only for an unprivileged
// container).
func TestProcSysWritable(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		privileged, readOnlyFS bool
		code                   int
		stderr                 string
	}{
		{"privileged", true, false, 0, ""},
		{"privileged, read-only root", true, true, 0, ""},
		{"unprivileged", false, false, 1, "sh: can't create /proc/sys/kernel/shm_rmid_forced: Read-only file system\n"},
		{"unprivileged, read-only root", false, true, 1, "sh: can't create /proc/sys/kernel/shm_rmid_forced: Read-only file system\n"},
	} {
		var errw bytes.Buffer
		fsys := NewFS(nil, tc.readOnlyFS).WithSysctls(nil, tc.privileged)
		code, err := Run(t.Context(), Process{Argv: []string{"sh", "-c", "echo 1 > /proc/sys/kernel/shm_rmid_forced"},
			FS: fsys, Security: Security{Privileged: tc.privileged}, Stderr: &errw})
		if err != nil || code != tc.code || errw.String() != tc.stderr {
			t.Errorf("%s: exit %d (%v), stderr %q; want %d, %q", tc.name, code, err, errw.String(), tc.code, tc.stderr)
		}
	}
}
