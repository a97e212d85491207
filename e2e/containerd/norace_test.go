//go:build !race

package containerd_test

const raceEnabled = false
