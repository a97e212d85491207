package enginetest

import (
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
