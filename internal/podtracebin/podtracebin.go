// Package podtracebin gives end-to-end tests the podtrace binary and its
// CNI plugin, built from this checkout as a user would build them.
package podtracebin

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sync"
	"testing"
)

// The packages of podtrace and of its CNI plugin; go build names each
// binary after its package's last element.
const (
	podtracePkg = "github.com/podtrace/podtrace/cmd/podtrace"
	pluginPkg   = "github.com/podtrace/podtrace/cmd/podtrace-cni"
)

// build is one directory of binaries built once per test process.
type build struct {
	once     sync.Once
	dir, out string
	err      error
}

var (
	podtrace = &build{}
	plugin   = &build{}
)

// get builds pkgs into a temporary directory the first time and returns
// the binary named name there.
func (b *build) get(name string, pkgs ...string) (string, error) {
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "podtrace-e2e-bin-"); b.err != nil {
			return
		}
		if b.err = os.Chmod(b.dir, 0o755); b.err != nil {
			return
		}
		b.out = filepath.Join(b.dir, name)
		cmd := exec.Command("go", append([]string{"build", "-o", b.dir}, pkgs...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("build %s: %w\n%s", name, err, out)
		}
	})
	return b.out, b.err
}

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
	out, err := podtrace.get(path.Base(podtracePkg), podtracePkg, pluginPkg)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// Plugin returns the CNI plugin beside $PODTRACE_BIN when that is set (as
// .ci/test builds them), else cmd/podtrace-cni alone built once per test
// process. A failed build fails tb; Removing removes it.
func Plugin(tb testing.TB) string {
	tb.Helper()
	if bin := os.Getenv("PODTRACE_BIN"); bin != "" {
		return filepath.Join(filepath.Dir(bin), path.Base(pluginPkg))
	}
	out, err := plugin.get(path.Base(pluginPkg), pluginPkg)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// TestingM is what TestMain is given: *testing.M has it.
type TestingM interface{ Run() int }

type removing struct{ TestingM }

// Run runs the tests, then removes what Path and Plugin built.
func (m removing) Run() int {
	defer func() {
		for _, b := range []*build{podtrace, plugin} {
			if b.dir != "" {
				os.RemoveAll(b.dir)
			}
		}
	}()
	return m.TestingM.Run()
}

// Removing returns m, whose Run also removes the binaries Path and Plugin
// built once the tests have run (podtrace is about 250 MB). Call it from
// TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(podtracebin.Removing(m).Run()) }
func Removing(m TestingM) TestingM { return removing{m} }
