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
	dir  string
	path string
	err  error
)

// Path returns $PODTRACE_BIN when set, else cmd/podtrace built once per
// test process into a temporary directory, with its CNI plugin
// (cmd/podtrace-cni) beside it as an installation has them. Any user may
// run them (a test runs podtrace as a user of its own). A failed build
// fails tb. Removing removes the directory once the tests have run.
func Path(tb testing.TB) string {
	tb.Helper()
	if bin := os.Getenv("PODTRACE_BIN"); bin != "" {
		return bin
	}
	once.Do(func() {
		if dir, err = os.MkdirTemp("", "podtrace-e2e-bin-"); err != nil {
			return
		}
		if err = os.Chmod(dir, 0o755); err != nil {
			return
		}
		path = filepath.Join(dir, "podtrace")
		build := exec.Command("go", "build", "-o", dir,
			"github.com/podtrace/podtrace/cmd/podtrace", "github.com/podtrace/podtrace/cmd/podtrace-cni")
		if out, buildErr := build.CombinedOutput(); buildErr != nil {
			err = fmt.Errorf("build podtrace: %w\n%s", buildErr, out)
		}
	})
	if err != nil {
		tb.Fatal(err)
	}
	return path
}

// TestingM is what TestMain is given: *testing.M has it.
type TestingM interface{ Run() int }

type removing struct{ TestingM }

// Run runs the tests, then removes what Path built.
func (m removing) Run() int {
	defer func() {
		if dir != "" {
			os.RemoveAll(dir)
		}
	}()
	return m.TestingM.Run()
}

// Removing returns m, whose Run also removes the binaries Path built once
// the tests have run (each is about 250 MB). Call it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(podtracebin.Removing(m).Run()) }
func Removing(m TestingM) TestingM { return removing{m} }
