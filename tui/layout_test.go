package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/podtrace/podtrace/stages"
)

// At 120 columns names and ReplicaSet hashes are whole, and so is STATUS.
func TestNamesAndStatusWholeAt120(t *testing.T) {
	m, _, _ := fixture(120, 40, "dark")
	s := ansi.Strip(m.Render())
	for _, want := range []string{"rs/web-7d9c5b8f4 ", "web-7d9c5b8f4-2xk9p ", "web-7d9c5b8f4-8mzq1 ", "ContainerCreating ", "ImagePullBackOff "} {
		if !strings.Contains(s, want) {
			t.Errorf("120 columns cut %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "…4-2xk9p") || strings.Contains(s, "ContainerC…") {
		t.Errorf("120 columns cut a name or a status:\n%s", s)
	}
}

// At 80 columns STATUS is still whole: names yield first.
func TestStatusWholeAt80(t *testing.T) {
	m, _, _ := fixture(80, 24, "dark")
	s := ansi.Strip(m.Render())
	for _, want := range []string{"ContainerCreating ", "ImagePullBackOff "} {
		if !strings.Contains(s, want) {
			t.Errorf("80 columns cut %q:\n%s", want, s)
		}
	}
}

// At 80x24 (and under 110 columns) NAME, STATUS and CAUSE win over the
// stage cells: names are whole, and one STAGE column shows the stage in
// trouble, or the selected one once the cursor moves along the lane.
func TestNameStatusAndCauseWinAt80(t *testing.T) {
	for _, w := range []int{80, 100} {
		m, _, _ := fixture(w, 24, "dark")
		s := ansi.Strip(m.Render())
		for name, want := range map[string][]string{
			"web-7d9c5b8f4-8mzq1": {"ImagePullBackOff  ↻3 pull ", `"nginx:1.277": not found`},
			"web-7d9c5b8f4-qv4tn": {"ContainerCreating ⏸ sandbox ", "held before sandbox"},
			"batch":               {"Pending           ↻2 schedule ", "1 Insufficient cpu"},
		} {
			for _, want := range want {
				if row := rowOf(s, name); !strings.Contains(row, want) {
					t.Errorf("%d columns: row of %s is %q, want it to hold %q", w, name, row, want)
				}
			}
		}
		if strings.Contains(s, " au az ad ") {
			t.Errorf("%d columns still draw every stage cell:\n%s", w, s)
		}
		press(m, "j", "j", "j", "j", "l", "l", "l", "l", "l", "l", "l", "l")
		if row := rowOf(ansi.Strip(m.Render()), "web-7d9c5b8f4-qv4tn"); !strings.Contains(row, "⏸ sandbox") {
			t.Errorf("%d columns: the selected sandbox stage is not in STAGE: %q", w, row)
		}
		press(m, "l")
		if row := rowOf(ansi.Strip(m.Render()), "web-7d9c5b8f4-qv4tn"); !strings.Contains(row, " cni ") {
			t.Errorf("%d columns: moving right does not move STAGE to cni: %q", w, row)
		}
	}
}

// Rows from several namespaces (attach -A) get a NAMESPACE column.
func TestNamespaceColumnAcrossNamespaces(t *testing.T) {
	m, _, _ := fixture(120, 40, "dark")
	if strings.Contains(ansi.Strip(m.Render()), "NAMESPACE") {
		t.Error("one namespace, yet a NAMESPACE column")
	}
	m.Fold(stages.Event{Time: at(3000), Namespace: "kube-system", Pod: "coredns-0", Stage: stages.Persist, Status: stages.Succeeded})
	s := ansi.Strip(m.Render())
	if !strings.Contains(s, "NAMESPACE") || !strings.Contains(rowOf(s, "coredns-0"), "kube-system") {
		t.Errorf("rows of two namespaces without a NAMESPACE column:\n%s", s)
	}
}

// At 120x40 a few pods leave the height to the events; at 80x24 the
// latest Warning shows in one line; the footer never cuts a key hint, and a
// long note wraps instead of being cut.
func TestPanesShareTheHeightAndFooterFits(t *testing.T) {
	m, _, _ := fixture(120, 40, "dark")
	if l, ev := m.split(); ev < 20 || l < 10 {
		t.Errorf("120x40 with 7 rows: lanes %d, events %d lines; want the events to get the spare height", l, ev)
	}
	m, _, _ = fixture(80, 24, "dark")
	s := ansi.Strip(m.Render())
	lines := strings.Split(s, "\n")
	if w := lines[len(lines)-2]; !strings.HasPrefix(w, "Warning") || !strings.Contains(w, "Failed to pull image") {
		t.Errorf("80x24 lacks the latest Warning above the footer: %q", w)
	}
	if f := lines[len(lines)-1]; strings.Contains(f, "…") || !strings.Contains(f, "? help") {
		t.Errorf("footer cut or without help: %q", f)
	}
	m.setNote(strings.Repeat("a long error message that says what went wrong ", 3), true)
	frame := m.Render()
	checkFrame(t, frame, 80, 24)
	if s := ansi.Strip(frame); !strings.Contains(s, "what went wrong") || strings.Count(s, "a long error") != 3 {
		t.Errorf("the long note is cut, not wrapped:\n%s", s)
	}
}

// ? explains the two-letter stage headers, each beside its stage's name
// on the same line, at any width.
func TestHelpExplainsStageHeaders(t *testing.T) {
	for _, w := range []int{80, 100, 130} {
		m, _, _ := fixture(w, 40, "dark")
		press(m, "?")
		s := strings.ReplaceAll(ansi.Strip(m.Render()), nbsp, " ")
		for _, id := range stages.Lifecycle {
			if want := id.Describe().Short + " " + string(id); !strings.Contains(s, want) {
				t.Errorf("%d columns: help lacks %q:\n%s", w, want, s)
			}
		}
		if !strings.Contains(s, "not reached") {
			t.Errorf("%d columns: help lacks the cells' legend:\n%s", w, s)
		}
	}
}
