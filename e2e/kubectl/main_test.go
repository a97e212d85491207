package kubectle2e

import (
	"testing"

	"github.com/podtrace/podtrace/engine/enginetest"
	"github.com/podtrace/podtrace/internal/podtracebin"
	"github.com/podtrace/podtrace/internal/testflags"
)

// testsAtOnce is how many tests run at once unless -parallel says
// otherwise: go test's default is one per core, but these tests mostly wait
// (on kubectl, a rollout, a CronJob's next minute) on the cluster they share.
const testsAtOnce = 8

// TestMain runs the end-to-end tests, testsAtOnce at a time, in a pod
// network namespace where one can be made, as `podtrace` runs the real
// kubelet; kubectl, started from here, shares it. The cluster the tests
// share stops once they have run.
func TestMain(m *testing.M) {
	testflags.DefaultParallel(testsAtOnce)
	enginetest.Main(podtracebin.Removing(stoppingShared{m}))
}

// stoppingShared runs the tests, then stops the cluster they shared.
type stoppingShared struct{ m *testing.M }

// Run runs the tests and stops the shared cluster.
func (s stoppingShared) Run() int {
	defer closeShared()
	return s.m.Run()
}
