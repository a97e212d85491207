//go:build !linux

package proc

import "math"

// cpuWeight is the cgroup v2 cpu.weight runc writes for CPU shares. On
// Linux it is github.com/opencontainers/cgroups'
// ConvertCPUSharesToCgroupV2Value, which builds only there; elsewhere (the
// simulated runtime on macOS) the same formula, taken from
// https://github.com/opencontainers/cgroups/blob/v0.0.6/utils.go#L425-L441
// (Apache License 2.0), as containerd's cgroup2 package also copies it.
func cpuWeight(shares uint64) uint64 {
	if shares == 0 {
		return 0
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
