//go:build race

package containerd_test

// raceEnabled: the race detector slows the engine side far more than
// containerd, so the latency ratio is only checked without it.
const raceEnabled = true
