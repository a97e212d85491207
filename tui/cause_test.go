package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/podtrace/podtrace/stages"
)

// rowOf returns the screen line of the lane named name.
func rowOf(frame, name string) string {
	for _, l := range strings.Split(ansi.Strip(frame), "\n") {
		if strings.Contains(l, " "+name+" ") {
			return l
		}
	}
	return ""
}

// Every stuck, failing or retrying pod says why in its own row, in
// upstream's words, at 80 and 120 columns, without a key pressed.
func TestRowsShowTheCause(t *testing.T) {
	next := at(20000)
	mount := stages.Event{Time: at(500), Namespace: "default", Pod: "cm", Node: "node-1", Stage: stages.Kubelet,
		Status: stages.Retrying, Attempt: 2, Reason: "FailedMount", NextTry: &next,
		Message: `MountVolume.SetUp failed for volume "settings" : configmap "cfg" not found`}
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		m, _, _ := fixture(size[0], size[1], "dark")
		m.Fold(stages.Event{Time: at(400), Namespace: "default", Pod: "cm", Stage: stages.Bind, Status: stages.Succeeded}, mount)
		frame := m.Render()
		for name, want := range map[string]string{
			"batch": "Insufficient cpu",
			"cm":    `configmap "cfg" not found`,
		} {
			if row := rowOf(frame, name); !strings.Contains(row, want) {
				t.Errorf("%dx%d: row of %s lacks %q: %q", size[0], size[1], name, want, row)
			}
		}
		if size[0] >= 120 {
			if row := rowOf(frame, "web-7d9c5b8f4-8mzq1"); !strings.Contains(row, "ImagePullBackOff") || !strings.Contains(row, `Failed to pull image "nginx:1.277"`) {
				t.Errorf("row of the pod that cannot pull lacks its reason and message: %q", row)
			}
			if row := rowOf(frame, "cm"); !strings.Contains(row, "FailedMount: ") {
				t.Errorf("the reason is not shown with the message: %q", row)
			}
		}
	}
}

// ! walks the failing pods, wrapping around, and selects each one's problem stage.
func TestNextProblemKey(t *testing.T) {
	m, _, _ := fixture(120, 40, "dark")
	var got []string
	for range 4 {
		press(m, "!")
		got = append(got, selectedName(m)+"@"+string(m.selectedStage()))
	}
	want := []string{"web-7d9c5b8f4-8mzq1@pull", "web-7d9c5b8f4-qv4tn@sandbox", "batch@schedule", "web-7d9c5b8f4-8mzq1@pull"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("! went to %v, want %v", got, want)
	}
}

// The selection stays on the same pod when rows are added before it or
// removed (a refused create's row goes away).
func TestSelectionFollowsThePod(t *testing.T) {
	m, _, _ := fixture(120, 40, "dark")
	press(m, "G")
	if selectedName(m) != "batch" {
		t.Fatalf("G selected %s", selectedName(m))
	}
	m.Fold(stages.Event{Time: at(3000), Namespace: "default", Pod: "aaa", Stage: stages.Persist, Status: stages.Succeeded})
	if selectedName(m) != "batch" {
		t.Fatalf("a pod added above moved the selection to %s", selectedName(m))
	}
	m.Fold(stages.Event{Time: at(3001), Namespace: "default", Pod: "aab", Stage: stages.Admission, Status: stages.Failed, Reason: "Forbidden"})
	if selectedName(m) != "batch" {
		t.Fatalf("a refused create moved the selection to %s", selectedName(m))
	}
	if row := rowOf(m.Render(), "aab"); row != "" {
		t.Error("a refused create is drawn as a pod")
	}
}

// The start cell counts restarts as kubectl's RESTARTS does.
func TestStartCellCountsRestarts(t *testing.T) {
	m, _, _ := fixture(80, 24, "dark")
	next := at(20000)
	m.Fold(stages.Event{Time: at(2000), Namespace: "default", Pod: "crash", Stage: stages.Start, Status: stages.Retrying, Attempt: 3,
		Reason: "CrashLoopBackOff", Message: "back-off 20s restarting failed container=app", NextTry: &next})
	if row := rowOf(m.Render(), "crash"); !strings.Contains(row, "↻2") {
		t.Errorf("3 start attempts are 2 restarts: %q", row)
	}
}
