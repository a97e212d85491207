package tui

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestEndToEndInTmux runs the UI binary (on the simulated demo source) in a
// real terminal: tmux at 120×40. It applies the 3-replica demo workload,
// waits for the lanes to show the pods Running, moves the selection, opens
// the detail and the help, and quits with q.
func TestEndToEndInTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux is not installed (.ci/run installs it)")
		}
		t.Skip("tmux not installed")
	}
	bin := filepath.Join(t.TempDir(), "tuidemo")
	if out, err := exec.Command("go", "build", "-o", bin, "./internal/demo/tuidemo").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	session := "podtrace-e2e-" + strconv.Itoa(os.Getpid())
	tmux := func(args ...string) string {
		out, err := exec.Command("tmux", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	tmux("new-session", "-d", "-x", "120", "-y", "40", "-s", session, "env", "TERM=xterm-256color", bin)
	t.Cleanup(func() { exec.Command("tmux", "kill-session", "-t", session).Run() })

	screen := func() string { return tmux("capture-pane", "-p", "-t", session) }
	waitFor := func(what string, ok func(string) bool) string {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			s := screen()
			if ok(s) {
				return s
			}
			if time.Now().After(deadline) {
				t.Fatalf("waiting for %s; screen:\n%s", what, s)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	has := func(sub string) func(string) bool { return func(s string) bool { return strings.Contains(s, sub) } }
	keys := func(k ...string) { tmux(append([]string{"send-keys", "-t", session}, k...)...) }

	waitFor("the first frame", has("No pods yet"))
	keys("a")
	waitFor("the workload picker", has("nginx Deployment, 3 replicas"))
	keys("Enter")
	s := waitFor("three pods Running", func(s string) bool {
		return strings.Count(s, " Running ") == 3 && strings.Contains(s, "pods 3 Running")
	})
	if !strings.Contains(s, "deploy/web") || !strings.Contains(s, "rs/web-") {
		t.Fatalf("pods are not grouped under their owners:\n%s", s)
	}
	keys("j", "j", "j")
	waitFor("the selection on the second pod", has("4/5"))
	keys("Enter")
	waitFor("the detail", has("kubectl describe pod web-"))
	keys("Escape")
	waitFor("back on the pods", func(s string) bool { return !strings.Contains(s, "kubectl describe") })
	keys("?")
	waitFor("the help", has("Press any key to close."))
	keys("x")
	waitFor("help closed", func(s string) bool { return !strings.Contains(s, "Press any key to close.") })
	keys("q")
	deadline := time.Now().Add(5 * time.Second)
	for exec.Command("tmux", "has-session", "-t", session).Run() == nil {
		if time.Now().After(deadline) {
			t.Fatalf("q did not quit; screen:\n%s", screen())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
