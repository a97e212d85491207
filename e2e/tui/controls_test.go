package tuie2e

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/podtrace/podtrace/internal/podtracebin"
	"github.com/podtrace/podtrace/internal/tmuxtest"
)

// TestControlsOnTheRealEngine drives the keys that act on the embedded
// cluster through the real binary: runtime speed and pause, a breakpoint
// before pull for every pod with step and continue, a pull fault from the
// fault menu with the back-off it causes and fast-forward, delete and scale.
func TestControlsOnTheRealEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	tmuxtest.Need(t)
	parallelCluster(t)
	tm := startTerm(t, 120, 40, podtracebin.Path(t), "--data-dir", t.TempDir())
	tm.WaitFor("3 Ready nodes", clusterStart, tmuxtest.Has("nodes 3/3 Ready"))

	// Clock: + doubles the engine's speed, - halves it, space pauses.
	tm.Keys("+")
	tm.WaitFor("clock at 2×", 10*time.Second, tmuxtest.Has("speed 2× ▶"))
	tm.Keys("-")
	tm.WaitFor("clock back at 1×", 10*time.Second, tmuxtest.Has("speed 1× ▶"))
	tm.Keys("Space")
	tm.WaitFor("the clock paused", 10*time.Second, tmuxtest.Has("speed 1× ⏸ paused"))
	tm.Keys("Space")
	tm.WaitFor("the clock running", 10*time.Second, tmuxtest.Has("speed 1× ▶"))

	// A breakpoint before pull for every pod (B at the pull column).
	for i := 0; i < 10; i++ {
		tm.Keys("l")
	}
	tm.Keys("B")
	tm.WaitFor("the breakpoint set", 10*time.Second, tmuxtest.Has("breakpoint set before pull for all"))
	applyWorkload(t, tm, "web")
	s := tm.WaitFor("three pods held before pull", time.Minute, func(s string) bool {
		return strings.Contains(s, "held 3") && strings.Count(s, "held before pull") == 3
	})
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, "held before pull") && !strings.Contains(l, "ContainerCreating") {
			t.Fatalf("a pod held before pull is not ContainerCreating: %q", l)
		}
	}

	// n steps the first pod through pull: it is held again before create.
	tm.Keys("g", "j", "j")
	sel := tm.WaitFor("the first pod selected", 5*time.Second, func(s string) bool {
		return strings.Contains(selectedLane(s), "held before pull")
	})
	pod := podName(t, selectedLane(sel))
	tm.Keys("n")
	tm.WaitFor("the pod stepped", 10*time.Second, tmuxtest.Has("stepped default/"))
	tm.WaitFor("the stepped pod pulled and held before create", 30*time.Second, func(s string) bool {
		l := selectedLane(s)
		c := cells(l)
		return strings.Contains(l, pod) && len(c) == 15 && strings.HasPrefix(c[10], "✓") && strings.HasPrefix(c[11], "⏸")
	})
	// B clears the breakpoint, C lets every held pod go on.
	tm.Keys("B")
	tm.WaitFor("the breakpoint cleared", 10*time.Second, tmuxtest.Has("breakpoint cleared before pull for all"))
	tm.Keys("C")
	tm.WaitFor("every pod continued", 10*time.Second, tmuxtest.Has("continued every held pod"))
	tm.WaitFor("three pods Running", time.Minute, tmuxtest.Has("pods 3 Running"))

	// f at the pull column: fail pulls of every pod (tab to the last scope).
	tm.Keys("f")
	tm.WaitFor("the fault menu", 10*time.Second, tmuxtest.Has("Faults at pull", "scope (tab)"))
	tm.Keys("Tab", "Tab")
	tm.WaitFor("the scope on every pod", 5*time.Second, tmuxtest.Has("[every pod]", "target: all"))
	tm.Keys("Enter")
	tm.WaitFor("the fault injected", 10*time.Second, tmuxtest.Has("injected: pull:fail", "faults 1"))

	// s scales the Deployment to 4: the new pod cannot pull its image.
	tm.Keys("s")
	tm.WaitFor("the scale prompt with the current count", 10*time.Second, tmuxtest.Has("Scale deployment/web (3 pods now) to replicas:"))
	tm.Keys("4", "Enter")
	tm.WaitFor("the scaling note", 10*time.Second, tmuxtest.Has("scaling deployment web to 4"))
	s = tm.WaitFor("the fourth pod in image pull back-off", time.Minute, func(s string) bool {
		return strings.Contains(s, "ErrImagePull") || strings.Contains(s, "ImagePullB") // the column cuts ImagePullBackOff
	})
	if !strings.Contains(lineWith(s, "deploy/web"), "3/4") {
		t.Fatalf("the Deployment does not say 3 of its 4 pods are ready: %q", lineWith(s, "deploy/web"))
	}
	// The cluster's own Warning events reach the events pane.
	tm.WaitFor("the kubelet's Failed event", 30*time.Second, tmuxtest.Has("Warning", "Failed", "Failed to pull image"))
	// > has no retry of the real kubelet's to run sooner: it says so.
	tm.WaitFor("the pull back-off", time.Minute, tmuxtest.Has("ImagePullB"))
	tm.Keys(">")
	tm.WaitFor("the fast-forward's answer", 10*time.Second, tmuxtest.Has("nothing to fast-forward: the real kubelet's back-offs run on real time"))

	// Select the failing pod, remove the fault from the fault menu, then d
	// deletes the pod and its ReplicaSet replaces it with one that pulls.
	bad := selectLane(t, tm, func(l string) bool { return strings.Contains(l, "ImagePull") || strings.Contains(l, "ErrImage") })
	gone := podName(t, bad)
	tm.Keys("f")
	tm.WaitFor("the fault menu with the active fault", 10*time.Second, tmuxtest.Has("remove #1 pull:fail"))
	tm.Keys("Enter") // the menu opens on the active fault
	tm.WaitFor("the fault removed", 10*time.Second, tmuxtest.Has("fault #1 removed"))
	tm.Keys("d")
	tm.WaitFor("the delete prompt", 10*time.Second, tmuxtest.Has("Delete pod default/"))
	tm.Keys("Enter")
	tm.WaitFor("the delete note", 10*time.Second, tmuxtest.Has("deleting pod default/"))
	s = tm.WaitFor("four pods ready again", 2*time.Minute, func(s string) bool {
		return strings.Contains(lineWith(s, "deploy/web"), "4/4")
	})
	if l := lineWith(s, gone); l != "" && !strings.Contains(l, "Deleted") && !strings.Contains(l, "Terminating") {
		t.Fatalf("the deleted pod's lane is neither Terminating nor Deleted: %q", l)
	}
	assertNoLogs(t, s)
	tm.Keys("q")
	tm.WaitFor("podtrace to exit", 30*time.Second, tmuxtest.Has("podtrace exited 0"))
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
	s := tm.Screen()
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
		tm.Keys("j")
	}
	for ; cur > want; cur-- {
		tm.Keys("k")
	}
	return selectedLane(tm.WaitFor("the lane selected", 5*time.Second, func(s string) bool { return ok(selectedLane(s)) }))
}
