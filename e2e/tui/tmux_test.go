// Package tuie2e drives the real podtrace binary in a real terminal (tmux)
// and asserts on what a user would read on the screen.
package tuie2e

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// needTmux skips only when tmux is missing outside CI; in CI (.ci/run
// installs it) a missing tmux is a failure.
func needTmux(tb testing.TB) {
	tb.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatal("tmux is not installed (.ci/run installs it)")
		}
		tb.Skip("tmux not installed")
	}
}

// term is one tmux server with one session running a command in a 120×40
// (or other) window. Its own socket keeps it apart from any other tmux.
type term struct {
	tb      testing.TB
	socket  string
	session string
	started time.Time
}

var termSeq int

// startTerm runs argv in a new detached tmux session of w×h cells. When the
// command exits the pane prints "podtrace exited N" and stays open.
func startTerm(tb testing.TB, w, h int, argv ...string) *term {
	tb.Helper()
	termSeq++
	t := &term{tb: tb, socket: "podtrace-e2e-" + strconv.Itoa(os.Getpid()) + "-" + strconv.Itoa(termSeq), session: "e2e"}
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	script := strings.Join(quoted, " ") + `; echo "podtrace exited $?"; exec sleep 600`
	t.started = time.Now()
	t.tmux("new-session", "-d", "-x", strconv.Itoa(w), "-y", strconv.Itoa(h), "-s", t.session,
		"env", "TERM=xterm-256color", "sh", "-c", script)
	tb.Cleanup(func() { exec.Command("tmux", "-L", t.socket, "kill-server").Run() })
	return t
}

func (t *term) tmux(args ...string) string {
	t.tb.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", t.socket}, args...)...).CombinedOutput()
	if err != nil {
		t.tb.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// screen returns the visible pane as text.
func (t *term) screen() string { return t.tmux("capture-pane", "-p", "-t", t.session) }

// screenANSI returns the visible pane with its colours as escape sequences.
func (t *term) screenANSI() string { return t.tmux("capture-pane", "-e", "-p", "-t", t.session) }

// keys sends tmux key names (a, Enter, Escape, ...). An Escape is followed by
// a pause so that the next key is not read as alt+key.
func (t *term) keys(keys ...string) {
	t.tb.Helper()
	for _, k := range keys {
		t.tmux("send-keys", "-t", t.session, k)
		if k == "Escape" {
			time.Sleep(300 * time.Millisecond)
		}
	}
}

// waitFor polls the screen until ok holds, failing with the screen after timeout.
func (t *term) waitFor(what string, timeout time.Duration, ok func(string) bool) string {
	t.tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s := t.screen()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.tb.Fatalf("waiting %s for %s; screen:\n%s", timeout, what, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func has(subs ...string) func(string) bool {
	return func(s string) bool {
		for _, sub := range subs {
			if !strings.Contains(s, sub) {
				return false
			}
		}
		return true
	}
}

// logLine matches what the libraries would print if their logs leaked: klog
// headers (I1121 20:55:47.123456 ...), etcd's and zap's JSON lines, Go's log
// timestamps, and panics.
var logLine = regexp.MustCompile(`(?m)^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+|"level":"|"logger":"|etcdserver|raft|^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d |goroutine \d+ \[|panic:`)

// assertNoLogs fails when anything on the screen looks like a library log line.
func assertNoLogs(tb testing.TB, screen string) {
	tb.Helper()
	if m := logLine.FindString(screen); m != "" {
		tb.Fatalf("a log line reached the terminal (%q):\n%s", m, screen)
	}
}

// lineWith returns the first screen line containing sub.
func lineWith(screen, sub string) string {
	for _, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

// selectedLane returns the lane line that carries the selection cursor.
func selectedLane(screen string) string {
	for _, l := range strings.Split(screen, "\n") {
		if strings.HasPrefix(l, "▶") {
			return l
		}
	}
	return ""
}

// applyWorkload opens the apply picker with a, walks its cursor to the named
// built-in workload and applies it.
func applyWorkload(tb testing.TB, tm *term, name string) {
	tb.Helper()
	tm.keys("a")
	s := tm.waitFor("the workload picker", 10*time.Second, has("Pick a workload"))
	cursor, want := -1, -1
	for i, l := range strings.Split(s, "\n") {
		_, inner, ok := strings.Cut(l, "│")
		if !ok {
			continue
		}
		inner = strings.TrimSpace(inner)
		if strings.HasPrefix(inner, "▶") {
			cursor = i
			inner = strings.TrimSpace(strings.TrimPrefix(inner, "▶"))
		}
		if f := strings.Fields(inner); len(f) > 0 && f[0] == name {
			want = i
		}
	}
	if cursor < 0 || want < cursor {
		tb.Fatalf("no workload %q below the picker's cursor:\n%s", name, s)
	}
	for i := cursor; i < want; i++ {
		tm.keys("j")
	}
	tm.waitFor("the cursor on "+name, 5*time.Second, func(s string) bool {
		for _, l := range strings.Split(s, "\n") {
			if strings.Contains(l, "│ ▶ "+name+" ") {
				return true
			}
		}
		return false
	})
	tm.keys("Enter")
	tm.waitFor("the workload applied", 30*time.Second, has("applied workload "+name))
}
