//go:build linux

package proc

import (
	"math"
	"testing"

	"github.com/opencontainers/cgroups"
)

// cpuWeight is a copy of runc's conversion (which builds only on Linux):
// it answers as the original for every CPU share a pod can ask for, from
// none (0) and the kernel's minimum (2) through the default (1024) to the
// maximum (262144) and beyond.
func TestCPUWeightIsRuncs(t *testing.T) {
	check := func(shares uint64) {
		if got, want := cpuWeight(shares), cgroups.ConvertCPUSharesToCgroupV2Value(shares); got != want {
			t.Errorf("cpuWeight(%d) = %d, runc's %d", shares, got, want)
		}
	}
	for shares := range uint64(270000) {
		check(shares)
	}
	for _, shares := range []uint64{1 << 20, 1 << 32, math.MaxInt64, math.MaxUint64} {
		check(shares)
	}
	if w := cpuWeight(1024); w != 100 { // the default shares, the default weight
		t.Errorf("cpuWeight(1024) = %d, want the default 100", w)
	}
}
