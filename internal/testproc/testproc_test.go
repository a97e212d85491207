package testproc

import (
	"errors"
	"os"
	"testing"
)

// TestOwnProcessRunsTheBodyInAChild: the parent returns at once, and the
// body runs only in the process OwnProcess started for this very test.
func TestOwnProcessRunsTheBodyInAChild(t *testing.T) {
	if OwnProcess(t) {
		return
	}
	if got := os.Getenv(envOwnProcess); got != t.Name() {
		t.Fatalf("the body ran in a process for %q", got)
	}
}

// TestRunPatternSelectsOneTest: each part of the name anchored and quoted.
func TestRunPatternSelectsOneTest(t *testing.T) {
	p := runPattern("TestBuiltin/crash-loop.v2")
	if p != `^TestBuiltin$/^crash-loop\.v2$` {
		t.Fatalf("runPattern = %q", p)
	}
}

// TestOwnProcessSkipsWhatItsProcessSkipped: a test skipped in its own
// process is skipped in the parent, not passed.
func TestOwnProcessSkipsWhatItsProcessSkipped(t *testing.T) {
	var sub *testing.T
	t.Run("skips", func(t *testing.T) {
		sub = t
		if OwnProcess(t) {
			return
		}
		t.Skip("skipped in its own process")
	})
	// The subtest is parallel: it ends after this function returns.
	t.Cleanup(func() {
		if !sub.Skipped() || sub.Failed() {
			t.Errorf("the subtest skipped in its own process: skipped %v, failed %v here", sub.Skipped(), sub.Failed())
		}
	})
}

// TestVerdictReadsTheProcessOutput: a failed run fails whatever it printed,
// and a process that ended well without a PASS or SKIP line for the test
// did not run it (a -test.run pattern that matched nothing).
func TestVerdictReadsTheProcessOutput(t *testing.T) {
	const name = "TestX/sub"
	for _, tc := range []struct {
		out  string
		err  error
		want outcome
	}{
		{"=== RUN   TestX/sub\n    --- PASS: TestX/sub (1.00s)\nPASS\n", nil, passed},
		{"    --- SKIP: TestX/sub (0.00s)\n", nil, skipped},
		{"    --- PASS: TestX/sub (1.00s)\n", errors.New("exit status 1"), failed},
		{"testing: warning: no tests to run\nPASS\n", nil, notRun},
		{"    --- PASS: TestX/subtle (1.00s)\n", nil, notRun},
	} {
		if got := verdict(name, []byte(tc.out), tc.err); got != tc.want {
			t.Errorf("verdict(%q, %v) = %d, want %d", tc.out, tc.err, got, tc.want)
		}
	}
}
