package tuie2e

import (
	"os"
	"testing"

	"github.com/podtrace/podtrace/internal/podtracebin"
	"github.com/podtrace/podtrace/internal/testflags"
)

// TestMain runs clustersAtOnce tests at once unless -parallel says
// otherwise (go test's default is one per core, but these tests mostly
// wait on a screen), and removes the podtrace binary the tests built once
// they have run.
func TestMain(m *testing.M) {
	testflags.DefaultParallel(clustersAtOnce)
	os.Exit(podtracebin.Removing(m).Run())
}
