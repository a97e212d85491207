//go:build !linux

package containerd

import "syscall"

// daemonProcAttr puts containerd in its own process group (there is no
// parent-death signal outside Linux).
func daemonProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
