package proc

import "math"

// cpuWeight is the cgroup v2 cpu.weight runc (libcontainer's fs2, runc
// 1.3 and later; the in-place resize specs accept it and the one before)
// writes for CPU shares: github.com/opencontainers/cgroups'
// ConvertCPUSharesToCgroupV2Value, copied from
// https://github.com/opencontainers/cgroups/blob/v0.0.6/utils.go#L425-L441
// (Apache License 2.0), as containerd's cgroup2 package also copies it,
// because the package builds only on Linux and the simulated runtime runs
// on macOS too. cpuweight_linux_test.go checks the copy against it.
func cpuWeight(shares uint64) uint64 {
	if shares == 0 {
		return 0 // unset
	}
	if shares <= 2 {
		return 1
	}
	if shares >= 262144 {
		return 10000
	}
	l := math.Log2(float64(shares))
	exponent := (l*l+125*l)/612.0 - 7.0/34.0 // a quadratic through min, max and default
	return uint64(math.Ceil(math.Pow(10, exponent)))
}
