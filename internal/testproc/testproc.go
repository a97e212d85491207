// Package testproc runs a test in a test process of its own, for tests
// that cannot share a process: kube-controller-manager registers itself
// process-wide, so one process runs one control plane at a time.
package testproc

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// envOwnProcess names, in a process OwnProcess started, the one test it runs.
const envOwnProcess = "PODTRACE_TEST_OWN_PROCESS"

// ProcessesAtOnce bounds the tests OwnProcess runs at once: each starts a
// cluster, and the machine has 2 cores.
const ProcessesAtOnce = 3

// processSlots holds one token per test running in a process of its own.
var processSlots = make(chan struct{}, ProcessesAtOnce)

// OwnProcess runs the test t in a test process of its own, beside the
// package's other such tests, and reports whether the caller is the
// parent: then the test has run (and failed t if it failed there) and the
// caller returns. In that process OwnProcess reports false, and the test's
// body runs.
//
// kube-controller-manager registers itself process-wide, so one process
// runs one control plane at a time. A test that needs a cluster of its own
// (a scenario's own nodes) gets one this way without waiting for the
// others; enginetest.Main, in the package's TestMain, gives each process
// its own pod network namespace.
func OwnProcess(t *testing.T) (parent bool) {
	t.Helper()
	if os.Getenv(envOwnProcess) == t.Name() {
		return false
	}
	t.Parallel()
	processSlots <- struct{}{}
	defer func() { <-processSlots }()
	args := []string{"-test.run=" + runPattern(t.Name()), "-test.count=1", "-test.v"}
	if testing.Short() {
		args = append(args, "-test.short")
	}
	if d, ok := t.Deadline(); ok {
		args = append(args, "-test.timeout="+time.Until(d).Round(time.Second).String())
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), envOwnProcess+"="+t.Name())
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start).Round(time.Millisecond)
	switch verdict(t.Name(), out, err) {
	case failed:
		t.Fatalf("in its own process (%s): %v\n%s", took, err, out)
	case skipped:
		t.Skipf("skipped in its own process:\n%s", out)
	case notRun:
		t.Fatalf("its own process (%s) did not run it:\n%s", took, out)
	}
	if testing.Verbose() {
		t.Logf("in its own process (%s):\n%s", took, out)
	}
	return true
}

// outcome is what became of a test in its own process.
type outcome int

const (
	passed outcome = iota
	failed
	skipped
	notRun // the process ended well without running it
)

// verdict reads the outcome of test name from the -test.v output of the
// process that ran it and the error its run returned.
func verdict(name string, out []byte, err error) outcome {
	switch {
	case err != nil:
		return failed
	case bytes.Contains(out, []byte("--- SKIP: "+name+" ")):
		return skipped
	case bytes.Contains(out, []byte("--- PASS: "+name+" ")):
		return passed
	}
	return notRun
}

// runPattern is the -test.run pattern that selects exactly the test
// named name ("TestX/sub").
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}
