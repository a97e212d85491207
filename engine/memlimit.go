package engine

import (
	"math"
	"os"
	"runtime/debug"
	"sync"
)

// DefaultMemoryLimit is the Go runtime's soft memory limit while an engine
// runs, unless GOMEMLIMIT or Config.MemoryLimit says otherwise. The garbage
// collector only works harder as the heap approaches it (and gives CPU back
// to the cluster, at most half of it, if the live heap itself is larger),
// so small clusters see no change and 10,000 pods stay near 1 GiB.
const DefaultMemoryLimit = 900 << 20

var memLimitMu sync.Mutex

// applyMemoryLimit sets the process's soft memory limit for an engine run:
// limit when positive, DefaultMemoryLimit when zero, nothing when negative
// or when the user set GOMEMLIMIT or a limit already. It returns a function
// restoring the previous limit if the one set is still in force.
func applyMemoryLimit(limit int64) (restore func()) {
	memLimitMu.Lock()
	defer memLimitMu.Unlock()
	if limit < 0 || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	if limit == 0 {
		limit = DefaultMemoryLimit
	}
	prev := debug.SetMemoryLimit(-1)
	if prev != math.MaxInt64 {
		return func() {} // set by someone else (another engine in this process, a caller)
	}
	debug.SetMemoryLimit(limit)
	return func() {
		memLimitMu.Lock()
		defer memLimitMu.Unlock()
		if debug.SetMemoryLimit(-1) == limit {
			debug.SetMemoryLimit(prev)
		}
	}
}
