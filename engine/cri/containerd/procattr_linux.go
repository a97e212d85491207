package containerd

import "syscall"

// daemonProcAttr puts containerd in its own process group, and has Linux
// stop it if podtrace dies.
func daemonProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
