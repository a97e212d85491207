package proc

import (
	"fmt"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/interp"
)

// A mountEntry is one line of a container's /proc/mounts.
type mountEntry struct{ device, dir, fsType, opts string }

// mountTable is what a container's /proc/mounts lists, as containerd
// sets a container up: its root (read-only with readOnlyRootFilesystem),
// /proc, /dev, /sys, its cgroup (v2) at cgroupDir, then the kubelet's
// mounts in the order the container sees them (a tmpfs the kubelet
// recorded is tmpfs, any other the node's disk, shown as ext4; image
// volumes are not listed).
func (f *FS) mountTable() []mountEntry {
	rw := func(ro bool, rest string) string {
		if ro {
			return "ro," + rest
		}
		return "rw," + rest
	}
	table := []mountEntry{
		{"overlay", "/", "overlay", rw(f.readOnly, "relatime")},
		{"proc", "/proc", "proc", "rw,nosuid,nodev,noexec,relatime"},
		{"tmpfs", "/dev", "tmpfs", "rw,nosuid,size=65536k,mode=755"},
		{"sysfs", "/sys", "sysfs", "ro,nosuid,nodev,noexec,relatime"},
		{"cgroup", cgroupDir, "cgroup2", "ro,nosuid,nodev,noexec,relatime"},
	}
	for i := len(f.mounts) - 1; i >= 0; i-- { // f.mounts is longest path first
		m := f.mounts[i]
		e := mountEntry{"/dev/root", m.ContainerPath, "ext4", rw(m.ReadOnly, "relatime")}
		if m.Type == "tmpfs" {
			e.device, e.fsType = "tmpfs", "tmpfs"
		}
		table = append(table, e)
	}
	return table
}

// mount is busybox's mount without a mount to make: it lists the mounted
// file systems ("DEVICE on DIR type TYPE (OPTIONS)"), only those of type
// TYPE with -t TYPE (a comma-separated list). Mounting is not simulated:
// it fails, as for a process without CAP_SYS_ADMIN.
func (c *commands) mount(hc interp.HandlerContext, args []string) error {
	var types []string
	var rest []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-t" && i+1 < len(args):
			types = strings.Split(args[i+1], ",")
			i++
		case strings.HasPrefix(a, "-t") && len(a) > 2:
			types = strings.Split(a[2:], ",")
		case strings.HasPrefix(a, "-"):
		default:
			rest = append(rest, a)
		}
	}
	if len(rest) > 0 {
		fmt.Fprintln(hc.Stderr, "mount: permission denied (are you root?)")
		return interp.ExitStatus(255)
	}
	for _, e := range c.p.FS.mountTable() {
		if len(types) == 0 || slices.Contains(types, e.fsType) {
			fmt.Fprintf(hc.Stdout, "%s on %s type %s (%s)\n", e.device, e.dir, e.fsType, e.opts)
		}
	}
	return nil
}
