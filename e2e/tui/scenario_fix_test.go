package tuie2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podtrace/podtrace/internal/podtracebin"
	"github.com/podtrace/podtrace/internal/tmuxtest"
)

// How TestEveryScenarioFix plays the scenarios.
const (
	// brokenFor is how long a participant looks at the broken cluster
	// (the benchmark; the test looks that long at most).
	brokenFor = 30 * time.Second
)

// builtinScenarios lists the built-in scenarios as the binary embeds them
// (engine/scenario/builtin/*.yaml).
func builtinScenarios(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "engine", "scenario", "builtin", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no built-in scenarios (%v)", err)
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".yaml"))
	}
	return names
}

// TestEveryScenarioFix plays each built-in scenario as a participant: it
// starts `podtrace scenario NAME` in a 200x60 terminal, sees its story
// first with the cluster's start-up progress under it, and waits until the
// story box says the cluster is broken as the story says (every symptom
// the scenario lists has shown: its stage events, Events and waiting
// reasons, as `podtrace scenario --headless --check` sees them), looks at
// the broken cluster until every row on the screen agreed with kubectl get
// (30 s at most), sees that the goal does not hold yet, applies the fix
// `podtrace scenario explain NAME` gives
// (its kubectl commands run in a shell, or the fault removed from the
// fault menu when the fix is to remove it), waits for the goal banner, and
// presses q: podtrace says it is stopping the cluster and exits 0.
// Meanwhile the screen is sampled against kubectl get (issue #27's
// differential test on every scenario). How fast each fix reaches the goal
// (the issue asks ≤ 20 s) is BenchmarkScenarioFixes' to say.
func TestEveryScenarioFix(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	tmuxtest.Need(t)
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed")
	}
	t.Parallel()
	bin := podtracebin.Path(t)
	for _, name := range builtinScenarios(t) {
		t.Run(name, func(t *testing.T) {
			parallelCluster(t)
			took := playScenario(t, bin, kubectl, name, true)
			t.Logf("%s: fix → goal banner %.1fs", name, took.Seconds())
		})
	}
}

// BenchmarkScenarioFixes plays every built-in scenario once per b.N, one
// at a time, and reports each one's time from its documented fix to the
// goal banner and the worst of them (the goal is ≤ 20 s each).
//
//	go test ./e2e/tui -run '^$' -bench ScenarioFixes -benchtime 1x
func BenchmarkScenarioFixes(b *testing.B) {
	tmuxtest.Need(b)
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		b.Skip("kubectl is not installed")
	}
	bin := podtracebin.Path(b)
	worst := map[string]time.Duration{}
	for i := 0; i < b.N; i++ {
		for _, name := range builtinScenarios(b) {
			worst[name] = max(worst[name], playScenario(b, bin, kubectl, name, false))
		}
	}
	var all time.Duration
	for name, d := range worst {
		b.ReportMetric(d.Seconds(), name+"-s")
		all = max(all, d)
	}
	b.ReportMetric(all.Seconds(), "worst-s")
}

// explainFix returns what `podtrace scenario explain NAME` tells a user to
// do: the fix's description and the shell commands after it ("" when the
// fix is done in the UI, removing the faults).
func explainFix(t testing.TB, bin, name string) (description, commands string) {
	t.Helper()
	out, err := exec.Command(bin, "scenario", "explain", name).Output()
	if err != nil {
		t.Fatalf("podtrace scenario explain %s: %v", name, err)
	}
	_, fix, ok := strings.Cut(string(out), "\nFix: ")
	if !ok {
		t.Fatalf("podtrace scenario explain %s says no fix:\n%s", name, out)
	}
	description, steps, _ := strings.Cut(fix, "\n")
	if strings.Contains(steps, "kubectl ") {
		return description, strings.TrimSpace(steps)
	}
	return description, ""
}

// playScenario runs one scenario through break, fix and goal, and returns
// the time from the fix to the goal banner (the longest wait when it never
// came). The broken cluster is looked at for brokenFor, or with
// untilCompared only until every row on the screen has agreed with kubectl
// once (three samples at least).
func playScenario(t testing.TB, bin, kubectl, name string, untilCompared bool) time.Duration {
	description, commands := explainFix(t, bin, name)
	data := filepath.Join(t.TempDir(), "data")
	opened := time.Now()
	tm := openScenario(t, bin, name, data)
	check := newScreenCheck(t, kubectl, filepath.Join(data, "kubeconfig"))
	screens := map[string]*term{name: tm}
	var looked func() bool // a participant looks for brokenFor
	if untilCompared {
		looked = check.covered
	}
	look := time.Now()
	check.sampleFor(screens, brokenFor, looked)
	t.Logf("%s: broken after %.1fs, looked at %.1fs (%d samples, %d of %d rows compared)", name,
		look.Sub(opened).Seconds(), time.Since(look).Seconds(), check.samples, len(check.agreed), len(check.shown))

	if s := tm.Screen(); strings.Contains(s, "Goal met:") {
		t.Fatalf("%s: the goal holds before the fix:\n%s", name, s)
	}
	var fixed time.Time
	if commands != "" {
		sh := exec.Command("sh", "-e", "-c", commands)
		sh.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(data, "kubeconfig"), "PATH="+filepath.Dir(kubectl)+":"+os.Getenv("PATH"))
		fixed = time.Now()
		if out, err := sh.CombinedOutput(); err != nil {
			t.Fatalf("the fix (%s) as explain gives it: %v\n%s\n%s", description, err, commands, out)
		}
	} else {
		fixed = removeFaults(t, tm, description)
	}
	banner := watchFor(tm, "Goal met:")
	const longest = 90 * time.Second
	check.sampleFor(screens, longest, func() bool { return !banner.at().IsZero() })
	at := banner.at()
	if at.IsZero() {
		t.Errorf("%s: no goal banner %s after the fix (%s):\n%s", name, longest, description, tm.Screen())
		at = time.Now()
	}
	if len(check.compared) == 0 {
		t.Errorf("%s: no row of the screen was ever compared with kubectl:\n%s", name, tm.Screen())
	}
	quitScenario(t, tm, name)
	return at.Sub(fixed)
}

// openScenario starts the scenario in a 200x60 terminal, checks that its
// story comes first with the cluster's start-up progress under it, and
// returns once the cluster is broken as the story says and the story is
// closed, the lanes on the screen.
func openScenario(t testing.TB, bin, name, data string) *term {
	t.Helper()
	tm := startTerm(t, 200, 60, bin, "scenario", name, "--data-dir", data)
	storyFirst(t, tm, name)
	tm.WaitFor("the cluster broken", clusterStart, tmuxtest.Has("The cluster is broken as the story says"))
	tm.Keys("Escape") // closes the story
	tm.WaitFor("the cluster's lanes", time.Minute, tmuxtest.Has(" NAME ", " RESTARTS "))
	if _, err := os.Stat(filepath.Join(data, "kubeconfig")); err != nil {
		t.Fatalf("no kubeconfig for kubectl: %v", err)
	}
	return tm
}

// removeFaults removes every active fault from the fault menu (f, then
// Enter on the fault it opens on) and returns when the last was removed.
func removeFaults(t testing.TB, tm *term, description string) time.Time {
	t.Helper()
	if !strings.Contains(description, "remove the fault") {
		t.Fatalf("the fix applies no manifest and does not say to remove the fault: %q", description)
	}
	var last time.Time
	for i := 0; ; i++ {
		tm.Keys("f")
		s := tm.WaitFor("the fault menu", 10*time.Second, tmuxtest.Has("Faults at "))
		if !strings.Contains(s, "remove #") {
			if i == 0 {
				t.Fatalf("the fault menu lists no fault to remove:\n%s", s)
			}
			tm.Keys("Escape")
			return last
		}
		last = time.Now()
		tm.Keys("Enter") // the menu opens on an active fault
		tm.WaitFor("the fault removed", 10*time.Second, func(s string) bool {
			return strings.Contains(s, " removed") && !strings.Contains(s, "Faults at ")
		})
	}
}

// quitScenario presses q and waits for podtrace to say it is stopping the
// cluster and to exit 0.
func quitScenario(t testing.TB, tm *term, name string) {
	t.Helper()
	// On a loaded machine the Escape and the q can reach podtrace in one
	// read, which a terminal takes for alt+q: a participant who sees no
	// "stopping the cluster" presses them again.
	quitting := func(s string) bool {
		return strings.Contains(s, "stopping the cluster") || strings.Contains(s, "podtrace exited")
	}
	for try := 0; try < 5; try++ {
		tm.Keys("Escape", "q")
		deadline := time.Now().Add(5 * time.Second)
		for !quitting(tm.Screen()) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if quitting(tm.Screen()) {
			break
		}
	}
	stoppedCleanly(t, name, tm.WaitFor("podtrace to exit", time.Minute, tmuxtest.Has("podtrace exited")))
}

// screenWatch notes when a text first appears on a terminal, polling it
// every 50 ms in the background until it does.
type screenWatch struct{ seen chan time.Time }

// watchFor starts watching tm's screen for text.
func watchFor(tm *term, text string) *screenWatch {
	w := &screenWatch{seen: make(chan time.Time, 1)}
	go func() {
		for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			out, err := tm.TryScreen()
			if err != nil {
				return // the session ended
			}
			if strings.Contains(out, text) {
				w.seen <- time.Now()
				return
			}
		}
	}()
	return w
}

// at is when the text appeared, zero while it has not.
func (w *screenWatch) at() time.Time {
	select {
	case t := <-w.seen:
		w.seen <- t
		return t
	default:
		return time.Time{}
	}
}
