package tui

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podtrace/podtrace/internal/tmuxtest"
)

// TestEndToEndInTmux runs the UI binary (on the simulated demo source) in a
// real terminal: tmux at 120×40. It applies the 3-replica demo workload,
// waits for the lanes to show the pods Running, moves the selection, opens
// the detail and the help, and quits with q.
func TestEndToEndInTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	tmuxtest.Need(t)
	bin := filepath.Join(t.TempDir(), "tuidemo")
	if out, err := exec.Command("go", "build", "-o", bin, "./internal/demo/tuidemo").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	// The pane outlives the demo, so that an early exit shows its last
	// words and status rather than a tmux server gone.
	tm := tmuxtest.Start(t, 120, 40, nil, tmuxtest.Quote(bin)+`; echo "tuidemo exited $?"; sleep 600`)
	waitFor := func(what string, ok func(string) bool) string {
		t.Helper()
		return tm.WaitFor(what, 15*time.Second, ok)
	}
	has := tmuxtest.Has

	waitFor("the first frame", has("No pods yet"))
	tm.Keys("a")
	waitFor("the workload picker", has("nginx Deployment, 3 replicas"))
	tm.Keys("Enter")
	s := waitFor("three pods Running", func(s string) bool {
		return strings.Count(s, " Running ") == 3 && strings.Contains(s, "pods 3 Running")
	})
	if !strings.Contains(s, "deploy/web") || !strings.Contains(s, "rs/web-") {
		t.Fatalf("pods are not grouped under their owners:\n%s", s)
	}
	tm.Keys("j", "j", "j")
	waitFor("the selection on the second pod", has("4/5"))
	tm.Keys("Enter")
	waitFor("the detail", has("kubectl describe pod web-"))
	tm.Keys("Escape")
	waitFor("back on the pods", func(s string) bool { return !strings.Contains(s, "kubectl describe") })
	tm.Keys("?")
	waitFor("the help", has("Press any key to close."))
	tm.Keys("x")
	waitFor("help closed", func(s string) bool { return !strings.Contains(s, "Press any key to close.") })
	tm.Keys("q")
	waitFor("q to quit", has("tuidemo exited 0"))
}
