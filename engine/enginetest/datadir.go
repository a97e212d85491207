package enginetest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// lateWrites is how long a stopped cluster's kubelets may still write
// under its data directory.
const lateWrites = 10 * time.Second

// DataDir returns a new directory for a cluster's data, removed with
// RemoveDataDir once the test and the cleanups registered after this
// call (the engine's Close) have run. Use it rather than t.TempDir for a
// cluster with kubelets: t.TempDir's removal fails the test on the first
// "directory not empty".
func DataDir(tb testing.TB) string {
	tb.Helper()
	dir, err := os.MkdirTemp("", "podtrace-test-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := RemoveDataDir(dir); err != nil {
			tb.Error(err)
		}
	})
	return dir
}

// RemoveDataDir removes a stopped cluster's data directory, trying again
// for a while when a removal races a late write. Upstream's kubelet does
// not stop every goroutine with its context: for a moment after the
// engine's Close, a pod worker that was mid-sync may still make a pod's
// directories under the kubelet's root. (The simulated runtime writes
// nothing once shut down.)
func RemoveDataDir(dir string) error {
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, lateWrites, true, func(context.Context) (bool, error) {
		last = os.RemoveAll(dir)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("data dir still written %v after the cluster stopped: %w", lateWrites, last)
	}
	return nil
}
