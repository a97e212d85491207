package proc

import (
	"path"
	"strconv"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// cgroupDir is where a container sees its own cgroup (v2, the unified
// hierarchy), as containerd mounts it in a container's cgroup namespace.
const cgroupDir = "/sys/fs/cgroup"

// cgroupDefaults are a new cgroup's files that runc writes from a
// container's resources, as the kernel creates them: no CPU or memory
// limit, the default weight.
var cgroupDefaults = map[string]string{
	"cpu.weight": "100",
	"cpu.max":    "max 100000",
	"memory.max": "max",
}

// WithResources gives f its container's cgroup v2 files (cgroupDir's
// cpu.weight, cpu.max, memory.max and the unified files the kubelet
// sets) as runc writes them from the CRI resources the container was
// created with, and /proc/1/oom_score_adj. It returns f.
func (f *FS) WithResources(res *runtimeapi.LinuxContainerResources) *FS {
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	for name, v := range cgroupDefaults {
		f.files[path.Join(cgroupDir, name)] = &memFile{data: []byte(v + "\n"), modTime: now}
	}
	f.files["/proc/1/oom_score_adj"] = &memFile{data: []byte(strconv.FormatInt(res.GetOomScoreAdj(), 10) + "\n"), modTime: now}
	f.applyResources(res, now)
	return f
}

// UpdateResources applies an in-place resize (CRI's
// UpdateContainerResources) to the cgroup files as `runc update` does:
// the settings res leaves unset (zero) keep their values.
func (f *FS) UpdateResources(res *runtimeapi.LinuxContainerResources) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applyResources(res, time.Now())
}

// applyResources writes cgroupWrites' files; f.mu is held.
func (f *FS) applyResources(res *runtimeapi.LinuxContainerResources, now time.Time) {
	period := "100000"
	if mf, ok := f.files[path.Join(cgroupDir, "cpu.max")]; ok {
		if _, p, ok := strings.Cut(strings.TrimSpace(string(mf.data)), " "); ok {
			period = p
		}
	}
	for name, v := range cgroupWrites(res, period) {
		f.files[path.Join(cgroupDir, name)] = &memFile{data: []byte(v + "\n"), modTime: now}
	}
}

// cgroupWrites are the cgroup v2 files runc (libcontainer's fs2) writes
// for res, and their values: cpu.weight from the CPU shares (cpuWeight),
// cpu.max "QUOTA PERIOD" ("max"
// for no quota; the kernel keeps period, the current one, when res sets
// none), memory.max (-1: "max"), and res's unified files. A zero setting
// is unset: runc leaves its file alone.
func cgroupWrites(res *runtimeapi.LinuxContainerResources, period string) map[string]string {
	w := map[string]string{}
	for name, v := range res.GetUnified() {
		w[name] = v
	}
	if s := res.GetCpuShares(); s > 0 {
		w["cpu.weight"] = strconv.FormatUint(cpuWeight(uint64(s)), 10)
	}
	if q, p := res.GetCpuQuota(), res.GetCpuPeriod(); q != 0 || p != 0 {
		quota := "max"
		if q > 0 {
			quota = strconv.FormatInt(q, 10)
		}
		if p > 0 {
			period = strconv.FormatInt(p, 10)
		}
		w["cpu.max"] = quota + " " + period
	}
	switch m := res.GetMemoryLimitInBytes(); {
	case m < 0:
		w["memory.max"] = "max"
	case m > 0:
		w["memory.max"] = strconv.FormatInt(m, 10)
	}
	return w
}
