package containerd_test

import (
	"os"
	"testing"

	"github.com/podtrace/podtrace/internal/podtracebin"
)

// TestMain removes the CNI plugin the tests built once they have run.
func TestMain(m *testing.M) { os.Exit(podtracebin.Removing(m).Run()) }
