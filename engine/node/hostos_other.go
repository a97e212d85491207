//go:build !linux

package node

import "golang.org/x/sys/unix"

// hostOS returns the kernel and operating system of the machine podtrace
// runs on, from uname as cAdvisor reads them off Linux (its Linux-only
// part does not build here).
func hostOS() (kernel, osImage string) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "Unknown", "Unknown"
	}
	return unix.ByteSliceToString(u.Release[:]), unix.ByteSliceToString(u.Sysname[:])
}
