package node

import cadvisormachine "github.com/google/cadvisor/machine"

// hostOS returns the kernel and operating system of the machine podtrace
// runs on, read as cAdvisor reads them for a real kubelet (uname, the
// PRETTY_NAME of /etc/os-release).
func hostOS() (kernel, osImage string) {
	return cadvisormachine.KernelVersion(), cadvisormachine.ContainerOsVersion()
}
