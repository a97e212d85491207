// Package podtracebin gives end-to-end tests the podtrace binary, built
// from this checkout as a user would build it.
package podtracebin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	once sync.Once
	path string
	err  error
)

// Path returns $PODTRACE_BIN when set, else cmd/podtrace built once per
// test process into a temporary directory. A failed build fails tb.
func Path(tb testing.TB) string {
	tb.Helper()
	if bin := os.Getenv("PODTRACE_BIN"); bin != "" {
		return bin
	}
	once.Do(func() {
		var dir string
		if dir, err = os.MkdirTemp("", "podtrace-e2e-bin-"); err != nil {
			return
		}
		path = filepath.Join(dir, "podtrace")
		if out, buildErr := exec.Command("go", "build", "-o", path, "github.com/podtrace/podtrace/cmd/podtrace").CombinedOutput(); buildErr != nil {
			err = fmt.Errorf("build podtrace: %w\n%s", buildErr, out)
		}
	})
	if err != nil {
		tb.Fatal(err)
	}
	return path
}
