// Package tmuxtest runs a program in a real terminal (a tmux session) for
// tests that assert on what a user would read on the screen and type on
// the keyboard.
package tmuxtest

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/podtrace/podtrace/internal/waittest"
)

// Need skips only when tmux is missing outside CI; in CI (.ci/run
// installs it) a missing tmux is a failure.
func Need(tb testing.TB) {
	tb.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatal("tmux is not installed (.ci/run installs it)")
		}
		tb.Skip("tmux not installed")
	}
}

// Term is one tmux server with one session running a command. Its own
// socket keeps it apart from any other tmux.
type Term struct {
	tb testing.TB
	// Socket is the tmux server's socket name, Session the session's.
	Socket, Session string
	// Started is when the session was started.
	Started time.Time

	ctl     *control // reads the screen, once started
	ctlOnce sync.Once
}

// seq numbers the sessions: tests running in parallel each get a server of their own.
var seq atomic.Int64

// Start runs script (a sh script) in a new detached tmux session of w×h
// cells, with TERM=xterm-256color and env added to the environment. The
// server is killed when the test ends.
func Start(tb testing.TB, w, h int, env []string, script string) *Term {
	tb.Helper()
	t := &Term{tb: tb, Socket: "podtrace-e2e-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(seq.Add(1), 10), Session: "e2e"}
	t.Started = time.Now()
	args := []string{"new-session", "-d", "-x", strconv.Itoa(w), "-y", strconv.Itoa(h), "-s", t.Session,
		"env", "TERM=xterm-256color"}
	args = append(append(args, env...), "sh", "-c", script)
	t.Tmux(args...)
	tb.Cleanup(func() {
		if t.ctl != nil {
			t.ctl.close()
		}
		exec.Command("tmux", "-L", t.Socket, "kill-server").Run()
	})
	return t
}

// Quote quotes argv for a sh script.
func Quote(argv ...string) string {
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(quoted, " ")
}

// Tmux runs a tmux command against the session's server.
func (t *Term) Tmux(args ...string) string {
	t.tb.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", t.Socket}, args...)...).CombinedOutput()
	if err != nil {
		t.tb.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// Screen returns the visible pane as text.
func (t *Term) Screen() string {
	t.tb.Helper()
	s, err := t.TryScreen()
	if err != nil {
		t.tb.Fatalf("tmux capture-pane: %v", err)
	}
	return s
}

// TryScreen returns the visible pane as text, or why it cannot (the
// session has ended). It may be called from any goroutine.
func (t *Term) TryScreen() (string, error) {
	t.ctlOnce.Do(func() { t.ctl = startControl(t.Socket, t.Session) })
	return t.ctl.run("capture-pane -p -t " + t.Session)
}

// ScreenANSI returns the visible pane with its colours as escape sequences.
func (t *Term) ScreenANSI() string { return t.Tmux("capture-pane", "-e", "-p", "-t", t.Session) }

// Keys sends tmux key names (a, Enter, Escape, ...). An Escape is followed by
// a pause so that the next key is not read as alt+key.
func (t *Term) Keys(keys ...string) {
	t.tb.Helper()
	for _, k := range keys {
		t.Tmux("send-keys", "-t", t.Session, k)
		if k == "Escape" {
			time.Sleep(300 * time.Millisecond)
		}
	}
}

// WaitFor polls the screen until ok holds, failing with the screen after timeout.
func (t *Term) WaitFor(what string, timeout time.Duration, ok func(string) bool) string {
	t.tb.Helper()
	var s string
	waittest.EventuallyEvery(t.tb, what, 50*time.Millisecond, timeout, func() (bool, string) {
		s = t.Screen()
		return ok(s), s
	})
	return s
}

// Has reports whether a screen holds every one of subs.
func Has(subs ...string) func(string) bool {
	return func(s string) bool {
		for _, sub := range subs {
			if !strings.Contains(s, sub) {
				return false
			}
		}
		return true
	}
}
