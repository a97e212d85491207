package kubectle2e

import (
	"testing"

	"github.com/podtrace/podtrace/engine/enginetest"
	"github.com/podtrace/podtrace/internal/podtracebin"
)

// TestMain runs the end-to-end tests in a pod network namespace where one
// can be made, as `podtrace` runs the real kubelet; kubectl, started from
// here, shares it.
func TestMain(m *testing.M) { enginetest.Main(podtracebin.Removing(m)) }
