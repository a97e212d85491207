package tuie2e

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/podtrace/podtrace/internal/podtracebin"
)

// TestControlsOnTheRealEngine drives the keys that act on the embedded
// cluster through the real binary: runtime speed and pause, a breakpoint
// before pull for every pod with step and continue, a pull fault from the
// fault menu with the back-off it causes and fast-forward, delete and scale.
func TestControlsOnTheRealEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	needTmux(t)
	tm := startTerm(t, 120, 40, podtracebin.Path(t), "--data-dir", t.TempDir())
	tm.waitFor("3 Ready nodes", time.Minute, has("nodes 3/3 Ready"))

	// Clock: + doubles the engine's speed, - halves it, space pauses.
	tm.keys("+")
	tm.waitFor("clock at 2×", 10*time.Second, has("speed 2× ▶"))
	tm.keys("-")
	tm.waitFor("clock back at 1×", 10*time.Second, has("speed 1× ▶"))
	tm.keys("Space")
	tm.waitFor("the clock paused", 10*time.Second, has("speed 1× ⏸ paused"))
	tm.keys("Space")
	tm.waitFor("the clock running", 10*time.Second, has("speed 1× ▶"))

	// A breakpoint before pull for every pod (B at the pull column).
	for i := 0; i < 10; i++ {
		tm.keys("l")
	}
	tm.keys("B")
	tm.waitFor("the breakpoint set", 10*time.Second, has("breakpoint set before pull for all"))
	applyWorkload(t, tm, "web")
	s := tm.waitFor("three pods held before pull", time.Minute, func(s string) bool {
		return strings.Contains(s, "held 3") && strings.Count(s, "held before pull") == 3
	})
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, "held before pull") && !strings.Contains(l, "ContainerCreating") {
			t.Fatalf("a pod held before pull is not ContainerCreating: %q", l)
		}
	}

	// n steps the first pod through pull: it is held again before create.
	tm.keys("g", "j", "j")
	sel := tm.waitFor("the first pod selected", 5*time.Second, func(s string) bool {
		return strings.Contains(selectedLane(s), "held before pull")
	})
	pod := podName(t, selectedLane(sel))
	tm.keys("n")
	tm.waitFor("the pod stepped", 10*time.Second, has("stepped default/"))
	tm.waitFor("the stepped pod pulled and held before create", 30*time.Second, func(s string) bool {
		l := selectedLane(s)
		c := cells(l)
		return strings.Contains(l, pod) && len(c) == 15 && strings.HasPrefix(c[10], "✓") && strings.HasPrefix(c[11], "⏸")
	})
	// B clears the breakpoint, C lets every held pod go on.
	tm.keys("B")
	tm.waitFor("the breakpoint cleared", 10*time.Second, has("breakpoint cleared before pull for all"))
	tm.keys("C")
	tm.waitFor("every pod continued", 10*time.Second, has("continued every held pod"))
	tm.waitFor("three pods Running", time.Minute, has("pods 3 Running"))

	// f at the pull column: fail pulls of every pod (tab to the last scope).
	tm.keys("f")
	tm.waitFor("the fault menu", 10*time.Second, has("Faults at pull", "scope (tab)"))
	tm.keys("Tab", "Tab")
	tm.waitFor("the scope on every pod", 5*time.Second, has("[every pod]", "target: all"))
	tm.keys("Enter")
	tm.waitFor("the fault injected", 10*time.Second, has("injected: pull:fail", "faults 1"))

	// s scales the Deployment to 4: the new pod cannot pull its image.
	tm.keys("s")
	tm.waitFor("the scale prompt with the current count", 10*time.Second, has("Scale deployment/web (3 pods now) to replicas:"))
	tm.keys("4", "Enter")
	tm.waitFor("the scaling note", 10*time.Second, has("scaling deployment web to 4"))
	s = tm.waitFor("the fourth pod in image pull back-off", time.Minute, func(s string) bool {
		return strings.Contains(s, "ErrImagePull") || strings.Contains(s, "ImagePullB") // the column cuts ImagePullBackOff
	})
	if !strings.Contains(lineWith(s, "deploy/web"), "3/4") {
		t.Fatalf("the Deployment does not say 3 of its 4 pods are ready: %q", lineWith(s, "deploy/web"))
	}
	// The cluster's own Warning events reach the events pane.
	tm.waitFor("the kubelet's Failed event", 30*time.Second, has("Warning", "Failed", "Failed to pull image"))
	// > has no retry of the real kubelet's to run sooner: it says so.
	tm.waitFor("the pull back-off", time.Minute, has("ImagePullB"))
	tm.keys(">")
	tm.waitFor("the fast-forward's answer", 10*time.Second, has("nothing to fast-forward: the real kubelet's back-offs run on real time"))

	// Select the failing pod, remove the fault from the fault menu, then d
	// deletes the pod and its ReplicaSet replaces it with one that pulls.
	bad := selectLane(t, tm, func(l string) bool { return strings.Contains(l, "ImagePull") || strings.Contains(l, "ErrImage") })
	gone := podName(t, bad)
	tm.keys("f")
	tm.waitFor("the fault menu with the active fault", 10*time.Second, has("remove #1 pull:fail"))
	tm.keys("Enter") // the menu opens on the active fault
	tm.waitFor("the fault removed", 10*time.Second, has("fault #1 removed"))
	tm.keys("d")
	tm.waitFor("the delete prompt", 10*time.Second, has("Delete pod default/"))
	tm.keys("Enter")
	tm.waitFor("the delete note", 10*time.Second, has("deleting pod default/"))
	s = tm.waitFor("four pods ready again", 2*time.Minute, func(s string) bool {
		return strings.Contains(lineWith(s, "deploy/web"), "4/4")
	})
	if l := lineWith(s, gone); l != "" && !strings.Contains(l, "Deleted") && !strings.Contains(l, "Terminating") {
		t.Fatalf("the deleted pod's lane is neither Terminating nor Deleted: %q", l)
	}
	assertNoLogs(t, s)
	tm.keys("q")
	tm.waitFor("podtrace to exit", 30*time.Second, has("podtrace exited 0"))
}

// podName returns the pod name on a lane line as drawn (possibly cut in the
// middle, "web-8…4-5wjzf"): its distinguishing suffix after the ellipsis.
func podName(t *testing.T, line string) string {
	t.Helper()
	for _, f := range strings.Fields(line) {
		if strings.HasPrefix(f, "web-") {
			if _, after, ok := strings.Cut(f, "…"); ok {
				return after
			}
			return f
		}
	}
	t.Fatalf("no pod name on %q", line)
	return ""
}

// cells returns a lane line's 15 stage cells: the 15 fields from the first
// that starts with a cell's symbol (the CAUSE column follows them).
func cells(line string) []string {
	fs := strings.Fields(line)
	for i, f := range fs {
		if r, _ := utf8.DecodeRuneInString(f); i > 0 && strings.ContainsRune("✓·⏸↻✗–⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏", r) {
			if len(fs)-i < 15 {
				return nil
			}
			return fs[i : i+15]
		}
	}
	return nil
}

// selectLane moves the selection to the first lane line for which ok holds
// and returns that line.
func selectLane(t *testing.T, tm *term, ok func(string) bool) string {
	t.Helper()
	s := tm.screen()
	lines := strings.Split(s, "\n")
	cur, want := -1, -1
	for i, l := range lines {
		if strings.HasPrefix(l, "▶") {
			cur = i
		}
		if want < 0 && i > 2 && ok(l) {
			want = i
		}
	}
	if cur < 0 || want < 0 {
		t.Fatalf("no selection (%d) or no lane to select (%d):\n%s", cur, want, s)
	}
	for ; cur < want; cur++ {
		tm.keys("j")
	}
	for ; cur > want; cur-- {
		tm.keys("k")
	}
	return selectedLane(tm.waitFor("the lane selected", 5*time.Second, func(s string) bool { return ok(selectedLane(s)) }))
}
