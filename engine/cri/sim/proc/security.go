package proc

import (
	"slices"
	"strings"
)

// Security is a container's Linux security context as CRI gives it to the
// runtime (its privileged flag, no_new_privs and capabilities).
type Security struct {
	// Privileged gives the container every capability.
	Privileged bool
	// NoNewPrivs makes exec ignore set-user-ID bits (the kubelet sets it
	// for allowPrivilegeEscalation: false).
	NoNewPrivs bool
	// AddCaps and DropCaps are the capabilities added to and dropped from
	// the runtime's default set, without CAP_, "ALL" for every one.
	AddCaps, DropCaps []string
}

// defaultCaps is containerd's default capability set (oci.WithDefaultCapabilities
// in pkg/oci/spec.go), which CRI containers start from.
var defaultCaps = []string{"CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD", "NET_RAW",
	"SETGID", "SETUID", "SETFCAP", "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL", "AUDIT_WRITE"}

// hasCap reports whether a process of the container running as uid has
// capability name in its effective set, as containerd computes the set
// (privileged: all; else the default set, all on add ALL, none on drop
// ALL, then the other additions, then the other drops): a user other than
// root has none (no ambient capabilities).
func (s Security) hasCap(uid int64, name string) bool {
	if uid != 0 {
		return false
	}
	if s.Privileged {
		return true
	}
	in := func(list []string, c string) bool {
		return slices.ContainsFunc(list, func(x string) bool { return strings.EqualFold(strings.TrimPrefix(strings.ToUpper(x), "CAP_"), c) })
	}
	has := in(defaultCaps, name)
	if in(s.AddCaps, "ALL") {
		has = true
	}
	if in(s.DropCaps, "ALL") {
		has = false
	}
	if in(s.AddCaps, name) {
		has = true
	}
	return has && !in(s.DropCaps, name)
}
