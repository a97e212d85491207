package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/podtrace/podtrace/stages"
)

// TestHintsWrapUnderTheirText opens two hints on a narrow terminal: the
// second is too long for one line, and its wrapped lines start under its
// text, not under (or with) its number.
func TestHintsWrapUnderTheirText(t *testing.T) {
	m, src, _ := fixture(80, 24, "dark")
	src.Scenario = testLesson()
	press(m, "H", "H")
	lines := strings.Split(ansi.Strip(m.Render()), "\n")
	first := -1
	for i, l := range lines {
		if strings.Contains(l, "2. FailedScheduling") {
			first = i
		}
	}
	if first < 0 || first+2 >= len(lines) {
		t.Fatalf("hint 2 not shown:\n%s", strings.Join(lines, "\n"))
	}
	col := ansi.StringWidth(lines[first][:strings.Index(lines[first], "FailedScheduling")])
	for _, l := range lines[first+1 : first+3] {
		text := strings.TrimLeft(strings.TrimLeft(strings.TrimSpace(l), "│"), " ")
		if strings.HasPrefix(text, "2.") || strings.HasPrefix(text, "H for") || text == "│" {
			t.Fatalf("hint 2 does not wrap under its text:\n%s", strings.Join(lines[first:first+3], "\n"))
		}
		if at := ansi.StringWidth(l[:strings.Index(l, text)]); at != col {
			t.Errorf("wrapped line starts at column %d, the hint's text at %d:\n%s", at, col, strings.Join(lines[first:first+3], "\n"))
		}
	}
}

// TestScenarioOpensOnItsStory: a scenario's UI opens on its story, with
// what the cluster is doing under it.
func TestScenarioOpensOnItsStory(t *testing.T) {
	l := testLesson()
	l.Progress = "Starting the cluster (etcd, the control plane, 3 nodes)… 2s"
	m := New(&FakeSource{SourceName: "embedded", C: make(chan stages.Event), Scenario: l}, Options{})
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	s := ansi.Strip(m.Render())
	story, progress := strings.Index(s, "The batch job was submitted"), strings.Index(s, "Starting the cluster")
	if story < 0 || progress < story {
		t.Fatalf("the story, and the start-up progress under it, are not on the first frame:\n%s", s)
	}
}
