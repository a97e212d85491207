package tui

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/podtrace/podtrace/themes"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// screens puts a fixture model on each screen the goldens cover.
var screens = []struct {
	name string
	keys []string
}{
	{"pods", nil},
	// The batch pod (last row), schedule stage: the node × plugin matrix.
	{"detail", []string{"G", "l", "l", "l", "l", "l", "enter"}},
	{"events", []string{"tab"}},
	// Enter on the kubelet's Failed pull Event: the Event in full.
	{"event", []string{"tab", "k", "k", "k", "k", "enter"}},
	// web's second pod, in ImagePullBackOff.
	{"timeline", []string{"j", "j", "j", "tab", "tab"}},
	{"help", []string{"?"}},
	// The fault menu at pull for the pod pulling its image.
	{"faultmenu", []string{"j", "j", "j", "l", "l", "l", "l", "l", "l", "l", "l", "l", "l", "f"}},
}

// TestGoldenWide covers the big-terminal layout: the detail at the right of
// the lanes and the events strip below them.
func TestGoldenWide(t *testing.T) {
	m, _, _ := fixture(200, 60, "dark")
	press(m, "G", "l", "l", "l", "l", "l")
	runCmd(m, m.refreshDetail(true))
	got := m.Render()
	checkFrame(t, got, 200, 60)
	golden(t, "pods-wide-dark-200x60", got)
}

func TestGoldenViews(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		for _, th := range themes.Names() {
			for _, sc := range screens {
				name := sc.name + "-" + th + "-" + itoa(size[0]) + "x" + itoa(size[1])
				t.Run(name, func(t *testing.T) {
					m, _, _ := fixture(size[0], size[1], th)
					press(m, sc.keys...)
					got := m.Render()
					checkFrame(t, got, size[0], size[1])
					golden(t, name, got)
				})
			}
		}
	}
}

// checkFrame asserts the frame is exactly w×h cells at most, as a terminal needs.
func checkFrame(t *testing.T, frame string, w, h int) {
	t.Helper()
	lines := strings.Split(frame, "\n")
	if len(lines) != h {
		t.Errorf("frame has %d lines, want %d", len(lines), h)
	}
	for i, l := range lines {
		if lw := ansi.StringWidth(l); lw > w {
			t.Errorf("line %d is %d cells wide, more than %d: %q", i, lw, w, ansi.Strip(l))
		}
	}
}

// golden compares got with testdata/NAME.golden (and its plain-text twin,
// NAME.txt, that is there for people to read); -update rewrites both.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("testdata", name+".txt"), []byte(ansi.Strip(got)), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run go test ./tui/... -update to create it): %v", err)
	}
	if string(want) != got {
		t.Errorf("View() differs from %s (run with -update if the change is intended)\n--- got ---\n%s\n--- want ---\n%s",
			path, ansi.Strip(got), ansi.Strip(string(want)))
	}
}

// lessonScreens are the views of a workshop scenario: the banner once the
// goal is met (it opens by itself), the story, and two graded hints.
var lessonScreens = []struct {
	name string
	met  bool
	keys []string
}{
	{"goal", true, nil},
	{"story", false, []string{"S"}},
	{"hints", false, []string{"H", "H"}},
}

func TestGoldenLesson(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		for _, th := range themes.Names() {
			for _, sc := range lessonScreens {
				name := sc.name + "-" + th + "-" + itoa(size[0]) + "x" + itoa(size[1])
				t.Run(name, func(t *testing.T) {
					m, src, _ := fixture(size[0], size[1], th)
					src.Scenario = testLesson()
					if sc.met {
						src.Met = "pod batch is Running, 1/1 containers ready"
					}
					m.refreshStatus(m.c.Now())
					press(m, sc.keys...)
					got := m.Render()
					checkFrame(t, got, size[0], size[1])
					golden(t, "lesson-"+name, got)
				})
			}
		}
	}
}

func testLesson() *Lesson {
	return &Lesson{
		Title: "Pending forever",
		Story: "The batch job was submitted an hour ago and has not started. Nobody changed the nodes. Get pod batch Running.",
		Goal:  "pod batch is Running and Ready",
		Hints: []string{"Pending means no node was chosen. Read the scheduler's event.",
			"FailedScheduling lists, per node, why it was left out: read it under Events in kubectl describe pod batch, " +
				"then compare each node's allocatable cpu (kubectl describe node) with the pod's request.",
			"Lower the pod's cpu request to what a node can give."},
		Explanation: "The scheduler only binds a pod to a node whose allocatable resources cover its requests. " +
			"No node had the cpu the pod asked for, so it stayed Pending with FailedScheduling: Insufficient cpu.",
	}
}
