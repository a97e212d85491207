package proc

import "github.com/opencontainers/cgroups"

// cpuWeight is the cgroup v2 cpu.weight runc writes for CPU shares:
// libcontainer's conversion (runc 1.3 and later; the in-place resize
// specs accept it and the one before).
func cpuWeight(shares uint64) uint64 { return cgroups.ConvertCPUSharesToCgroupV2Value(shares) }
