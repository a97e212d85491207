package engine

import (
	"math"
	"runtime/debug"
	"testing"
)

func TestApplyMemoryLimit(t *testing.T) {
	if debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Skip("a memory limit is already set for this process (GOMEMLIMIT?)")
	}
	t.Setenv("GOMEMLIMIT", "")
	for _, tc := range []struct {
		name  string
		limit int64
		want  int64
	}{
		{"default", 0, DefaultMemoryLimit},
		{"explicit", 2 << 30, 2 << 30},
		{"none", -1, math.MaxInt64},
	} {
		restore := applyMemoryLimit(tc.limit)
		if got := debug.SetMemoryLimit(-1); got != tc.want {
			t.Errorf("%s: limit %d, want %d", tc.name, got, tc.want)
		}
		inner := applyMemoryLimit(1 << 30) // a second engine leaves the first one's limit alone
		if got := debug.SetMemoryLimit(-1); got != tc.want && tc.limit >= 0 {
			t.Errorf("%s: a second engine changed the limit to %d", tc.name, got)
		}
		inner()
		restore()
		if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
			debug.SetMemoryLimit(math.MaxInt64)
			t.Errorf("%s: limit %d after restore, want none", tc.name, got)
		}
	}
}
