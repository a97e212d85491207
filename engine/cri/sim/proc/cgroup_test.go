package proc

import (
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// A container's cgroup v2 files show the CPU and memory settings it was
// created with, then those of in-place resizes, as the in-place resize
// specs read them by exec (`head -n 1 /sys/fs/cgroup/cpu.max`): the
// values runc writes for the kubelet's CRI resources.
func TestCgroupFilesFollowResources(t *testing.T) {
	type files struct{ cpuMax, weight, memMax string }
	for _, tc := range []struct {
		name    string
		created *runtimeapi.LinuxContainerResources
		want    files
		updates []*runtimeapi.LinuxContainerResources
		after   files // after the updates
	}{
		{name: "no resources: the kernel's defaults", want: files{"max 100000", "100", "max"}},
		{name: "burstable, CPU request only (100m: 102 shares)",
			created: &runtimeapi.LinuxContainerResources{CpuShares: 102, CpuPeriod: 100000},
			want:    files{"max 100000", "17", "max"},
			// the resize adds a CPU limit of 200m and a memory limit
			updates: []*runtimeapi.LinuxContainerResources{{CpuShares: 204, CpuQuota: 20000, CpuPeriod: 100000, MemoryLimitInBytes: 256 << 20}},
			after:   files{"20000 100000", "29", "268435456"}},
		{name: "resize with equivalents (2m/10m, then 1m/5m: the minimums)",
			created: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuQuota: 1000, CpuPeriod: 100000},
			want:    files{"1000 100000", "1", "max"},
			updates: []*runtimeapi.LinuxContainerResources{{CpuShares: 2, CpuQuota: 1000, CpuPeriod: 100000}},
			after:   files{"1000 100000", "1", "max"}},
		{name: "a resize leaves what it does not set (runc update)",
			created: &runtimeapi.LinuxContainerResources{CpuShares: 1024, CpuQuota: 50000, CpuPeriod: 50000, MemoryLimitInBytes: 64 << 20},
			want:    files{"50000 50000", "100", "67108864"},
			updates: []*runtimeapi.LinuxContainerResources{{CpuQuota: 20000}, {MemoryLimitInBytes: -1}},
			after:   files{"20000 50000", "100", "max"}},
		{name: "no CPU limit: quota -1",
			created: &runtimeapi.LinuxContainerResources{CpuShares: 262144, CpuQuota: -1, CpuPeriod: 100000},
			want:    files{"max 100000", "10000", "max"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := container(t).WithResources(tc.created)
			check := func(when string, want files) {
				t.Helper()
				for name, v := range map[string]string{"cpu.max": want.cpuMax, "cpu.weight": want.weight, "memory.max": want.memMax} {
					if v == "" {
						continue
					}
					code, out, stderr := run(t, fsys, true, "/bin/sh", "-c", "head -n 1 /sys/fs/cgroup/"+name)
					if code != 0 || out != v+"\n" {
						t.Errorf("%s: head -n 1 /sys/fs/cgroup/%s: exit %d, %q %q; want %q", when, name, code, out, stderr, v)
					}
				}
			}
			check("created", tc.want)
			for _, u := range tc.updates {
				fsys.UpdateResources(u)
			}
			if tc.updates != nil {
				check("resized", tc.after)
			}
		})
	}
}

// The OOM score the kubelet gives a container is its process's.
func TestOOMScoreAdj(t *testing.T) {
	fsys := container(t).WithResources(&runtimeapi.LinuxContainerResources{OomScoreAdj: 937})
	if code, out, _ := run(t, fsys, true, "cat", "/proc/1/oom_score_adj"); code != 0 || out != "937\n" {
		t.Errorf("cat /proc/1/oom_score_adj: exit %d, %q; want 937", code, out)
	}
}

// busybox's mount lists the container's file systems, the cgroup2 one at
// /sys/fs/cgroup (the e2e framework's test for a cgroup v2 node is `mount
// -t cgroup2` naming /sys/fs/cgroup), and mounts nothing.
func TestMount(t *testing.T) {
	fsys := container(t)
	for _, tc := range []struct {
		cmd       string
		code      int
		want      []string // lines, in order
		wantNot   []string
		wantError string
	}{
		{cmd: "mount -t cgroup2", want: []string{"cgroup on /sys/fs/cgroup type cgroup2 (ro,nosuid,nodev,noexec,relatime)"},
			wantNot: []string{"overlay", "/data"}},
		{cmd: "mount", want: []string{"overlay on / type overlay (rw,relatime)", "cgroup on /sys/fs/cgroup type cgroup2",
			"/dev/root on /data type ext4 (rw,relatime)", "/dev/root on /etc/config type ext4 (ro,relatime)"}},
		{cmd: "mount -t proc,sysfs", want: []string{"proc on /proc type proc", "sysfs on /sys type sysfs"}, wantNot: []string{"cgroup"}},
		{cmd: "mount -t nfs", wantNot: []string{"on"}},
		{cmd: "mount /dev/sdb /mnt", code: 255, wantError: "permission denied"},
	} {
		code, out, stderr := run(t, fsys, true, "/bin/sh", "-c", tc.cmd)
		if code != tc.code || !strings.Contains(stderr, tc.wantError) {
			t.Errorf("%s: exit %d, stderr %q; want %d, %q", tc.cmd, code, stderr, tc.code, tc.wantError)
		}
		rest := out
		for _, w := range tc.want {
			i := strings.Index(rest, w)
			if i < 0 {
				t.Errorf("%s: %q lacks %q (in order)", tc.cmd, out, w)
				break
			}
			rest = rest[i+len(w):]
		}
		for _, w := range tc.wantNot {
			if strings.Contains(out, w) {
				t.Errorf("%s: %q has %q", tc.cmd, out, w)
			}
		}
	}
}
