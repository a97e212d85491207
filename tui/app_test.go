package tui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/podtrace/podtrace/stages"
)

func selectedName(m *Model) string {
	if l := m.selected(); l != nil {
		return l.Name
	}
	return ""
}

func TestKeysMoveSelection(t *testing.T) {
	tests := []struct {
		keys      []string
		wantPod   string
		wantStage stages.ID
	}{
		{nil, "web", stages.Authn},
		{[]string{"j", "j"}, "web-7d9c5b8f4-2xk9p", stages.Authn},
		{[]string{"down", "down", "up"}, "web-7d9c5b8f4", stages.Authn},
		{[]string{"k", "k"}, "web", stages.Authn},                 // stops at the top
		{[]string{"G", "j"}, "batch", stages.Authn},               // stops at the bottom
		{[]string{"G", "g"}, "web", stages.Authn},                 // back to the top
		{[]string{"l", "l", "right"}, "web", stages.Persist},      // stages to the right
		{[]string{"h", "l", "left", "left"}, "web", stages.Authn}, // and not past the first
	}
	for _, tt := range tests {
		m, _, _ := fixture(80, 24, "dark")
		press(m, tt.keys...)
		if got := selectedName(m); got != tt.wantPod || m.selectedStage() != tt.wantStage {
			t.Errorf("keys %v: selected %s at %s, want %s at %s", tt.keys, got, m.selectedStage(), tt.wantPod, tt.wantStage)
		}
	}
}

func TestLastStageIsReachable(t *testing.T) {
	m, _, _ := fixture(80, 24, "dark")
	for range 20 {
		press(m, "l")
	}
	if m.selectedStage() != stages.Ready {
		t.Fatalf("stage after 20×l = %s, want ready", m.selectedStage())
	}
}

func TestFilterKeepsMatchesAndOwners(t *testing.T) {
	m, _, _ := fixture(80, 24, "dark")
	press(m, "/", "8", "m", "z")
	if !strings.Contains(ansi.Strip(m.Render()), "/8mz") {
		t.Error("footer does not show the filter being typed")
	}
	press(m, "enter")
	var names []string
	for _, l := range m.store.Rows() {
		names = append(names, l.Name)
	}
	if strings.Join(names, ",") != "web,web-7d9c5b8f4,web-7d9c5b8f4-8mzq1" {
		t.Fatalf("rows after filter 8mz = %v", names)
	}
	if !strings.Contains(ansi.Strip(m.Render()), "filter: 8mz") {
		t.Error("tabs line does not show the active filter")
	}
	press(m, "esc")
	if len(m.store.Rows()) != 7 {
		t.Fatalf("esc should clear the filter, %d rows", len(m.store.Rows()))
	}
}

func TestPaneSwitching(t *testing.T) {
	m, _, _ := fixture(80, 24, "dark")
	want := []screen{screenEvents, screenTimeline, screenPods}
	for _, w := range want {
		press(m, "tab")
		if m.screen != w {
			t.Fatalf("tab: screen %s, want %s", screenNames[m.screen], screenNames[w])
		}
	}
	press(m, "G", "enter")
	if m.screen != screenDetail {
		t.Fatal("enter does not open the detail")
	}
	if d := ansi.Strip(m.Render()); !strings.Contains(d, "schedule") || !strings.Contains(d, "pod/batch") {
		t.Errorf("enter does not open batch's failing stage (schedule), whatever column is selected:\n%s", d)
	}
	press(m, "k")
	if d := ansi.Strip(m.Render()); !strings.Contains(d, "pod/api-0") || !strings.Contains(d, "PodScheduled") {
		t.Errorf("moving in the detail does not show the next pod as stored:\n%s", d)
	}
	if m.selectedStage() != stages.Pull {
		t.Errorf("the detail of api-0 shows %s, want its stage in progress, pull", m.selectedStage())
	}
	press(m, "esc")
	if m.screen != screenPods {
		t.Fatal("esc does not return from the detail")
	}
	press(m, "e")
	if m.screen != screenEvents {
		t.Fatal("e does not open events")
	}
	press(m, "T")
	if m.screen != screenTimeline {
		t.Fatal("T does not open the timeline")
	}
}

func TestFaultMenuCallsSource(t *testing.T) {
	tests := []struct {
		name string
		keys []string
		want string
	}{
		// Third row is pod web-…-2xk9p on node-1; ten l's reach pull.
		{"default variant for this pod", []string{"j", "enter"}, "add pull:fail:not-found@pod/default/web-7d9c5b8f4-2xk9p"},
		{"second variant", []string{"j", "j", "enter"}, "add pull:fail:unauthorized@pod/default/web-7d9c5b8f4-2xk9p"},
		{"node scope", []string{"j", "tab", "enter"}, "add pull:fail:not-found@node/node-1"},
		{"every pod", []string{"j", "tab", "tab", "j", "j", "enter"}, "add pull:delay:2s"},
		{"hang", []string{"j", "j", "j", "j", "j", "j", "enter"}, "add pull:hang@pod/default/web-7d9c5b8f4-2xk9p"},
		{"flake 3", []string{"G", "j", "j", "j", "j", "j", "j", "j", "j", "enter"}, "add pull:flake:3@pod/default/web-7d9c5b8f4-2xk9p"},
		{"remove active fault (the menu opens on it)", []string{"enter"}, "remove 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _, rec := fixture(80, 24, "dark")
			press(m, "j", "j")
			for range 10 {
				press(m, "l")
			}
			press(m, "f")
			if _, ok := m.overlay.(*faultMenu); !ok {
				t.Fatalf("f did not open the fault menu at %s", m.selectedStage())
			}
			press(m, tt.keys...)
			if len(rec.calls) != 1 || rec.calls[0] != tt.want {
				t.Fatalf("calls %v, want [%s]", rec.calls, tt.want)
			}
			if m.overlay != nil {
				t.Error("the menu should close after a choice")
			}
			if !strings.Contains(m.note, "fault") {
				t.Errorf("footer note %q does not report the fault", m.note)
			}
		})
	}
}

func TestBreakpointsAndStepping(t *testing.T) {
	m, _, rec := fixture(80, 24, "dark")
	press(m, "j", "j", "j", "j") // web-…-qv4tn, held before sandbox
	for range 8 {
		press(m, "l")
	}
	press(m, "b", "b", "B", "n", "c", "C")
	want := []string{
		"break sandbox@pod/default/web-7d9c5b8f4-qv4tn",
		"clear sandbox@pod/default/web-7d9c5b8f4-qv4tn",
		"break sandbox@all",
		"step default/web-7d9c5b8f4-qv4tn",
		"continue default/web-7d9c5b8f4-qv4tn",
		"continue ",
	}
	if strings.Join(rec.calls, "|") != strings.Join(want, "|") {
		t.Fatalf("calls\n%v\nwant\n%v", rec.calls, want)
	}
}

func TestClockKeys(t *testing.T) {
	m, src, _ := fixture(80, 24, "dark")
	ck := src.ClockControl.(*FakeClock)
	press(m, "space")
	if !ck.IsPaused || !strings.Contains(ansi.Strip(m.headerLine(120)), "⏸") {
		t.Fatalf("space: paused=%v header %q", ck.IsPaused, ansi.Strip(m.headerLine(120)))
	}
	press(m, "space", "+", "+")
	if ck.IsPaused || ck.Rate != 4 {
		t.Fatalf("after resume and two +: paused=%v speed=%v, want running at 4", ck.IsPaused, ck.Rate)
	}
	press(m, "-")
	if ck.Rate != 2 || !strings.Contains(m.headerLine(120), "2×") {
		t.Fatalf("- : speed %v, header %q", ck.Rate, ansi.Strip(m.headerLine(120)))
	}
	ck.Ran = "2 pods back in the scheduling queue"
	press(m, ">")
	if !strings.Contains(m.note, "fast-forwarded: 2 pods back in the scheduling queue") {
		t.Fatalf("note %q", m.note)
	}
}

// A live cluster runs on real time whatever pause and speed do (they hold
// its gates and pace its simulated runtime), so the UI's estimate of the
// cluster's time (waits, "next try in") runs at 1×; a replay's clock stops
// when paused and runs at its speed.
func TestEngineNowFollowsTheSourceClock(t *testing.T) {
	for _, tc := range []struct {
		name  string
		clock FakeClock
		want  time.Duration // engine time passed in 10 s of wall time
	}{
		{"live, running at 4x", FakeClock{Rate: 4, Real: true}, 10 * time.Second},
		{"live, paused", FakeClock{Rate: 1, IsPaused: true, Real: true}, 10 * time.Second},
		{"replay at 4x", FakeClock{Rate: 4}, 40 * time.Second},
		{"replay paused", FakeClock{Rate: 4, IsPaused: true}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wall := time.Date(2030, 6, 1, 0, 0, 0, 0, time.UTC)
			ck := tc.clock
			m := New(&FakeSource{SourceName: "embedded", ClockControl: &ck}, Options{Now: func() time.Time { return wall }})
			m.refreshStatus(wall)
			m.anchorEng, m.anchorWal = wall, wall
			wall = wall.Add(10 * time.Second)
			if got := m.engineNow().Sub(m.anchorEng); got != tc.want {
				t.Errorf("engine time after 10s: %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDeleteScaleApply(t *testing.T) {
	m, _, rec := fixture(80, 24, "dark")
	press(m, "j", "j", "d", "y", "enter")
	press(m, "d", "n", "enter") // declined
	press(m, "s", "5", "enter")
	press(m, "a", "j", "enter")
	press(m, "a", "esc")
	want := []string{"delete default/web-7d9c5b8f4-2xk9p", "scale default Deployment web 5", "apply kind: Pod"}
	if strings.Join(rec.calls, "|") != strings.Join(want, "|") {
		t.Fatalf("calls %v, want %v", rec.calls, want)
	}
	press(m, "s", "x", "enter")
	if !m.noteErr || !strings.Contains(m.note, "want a number") {
		t.Fatalf("bad replicas note %q", m.note)
	}
	press(m, "k", "k", "d")
	if !m.noteErr || !strings.Contains(m.note, "select a pod") {
		t.Fatalf("delete on an owner: note %q", m.note)
	}
}

func TestUnavailableCommandsSayWhy(t *testing.T) {
	src := &FakeSource{SourceName: "cluster prod", StatusFunc: func() Status { return Status{ReadOnly: "read-only: attached to cluster prod"} }}
	m := New(src, Options{Now: func() time.Time { return t0 }})
	m.Fold(story()...)
	for _, k := range []string{"f", "b", "n", "space", "a", "s"} {
		m.note = ""
		press(m, k)
		if !m.noteErr || !strings.Contains(m.note, "unavailable") {
			t.Errorf("key %s on a read-only source: note %q", k, m.note)
		}
	}
	if !strings.Contains(m.note, "read-only: attached to cluster prod") {
		t.Errorf("note %q does not say why", m.note)
	}
	press(m, "?")
	help := ansi.Strip(m.Render())
	if strings.Contains(help, "faults at") || strings.Contains(help, "apply workload") || !strings.Contains(help, "cannot serve are left out: read-only") {
		t.Errorf("help advertises keys a read-only source cannot serve, or does not say why:\n%s", help)
	}
	press(m, "x")
	if foot := ansi.Strip(m.Render()); strings.Contains(foot, "apply workload") || strings.Contains(foot, "faster") {
		t.Errorf("the footer advertises keys a read-only source cannot serve:\n%s", foot)
	}
}

func TestFrameDrainsSourceInOneBatch(t *testing.T) {
	m, src, _ := fixture(80, 24, "dark")
	before := m.store.Len()
	for i := range 300 {
		src.C <- stages.Event{Time: at(4000 + i), Namespace: "load", Pod: "p-" + itoa(i), Stage: stages.Persist, Status: stages.Succeeded}
	}
	m.Update(frameMsg(time.Now()))
	if got := m.store.Len() - before; got != 300 {
		t.Fatalf("one frame folded %d new lanes, want 300", got)
	}
	close(src.C)
	m.Update(frameMsg(time.Now()))
	if !m.ended || !strings.Contains(ansi.Strip(m.Render()), "source ended") {
		t.Fatal("a closed source is not reported")
	}
}

func TestMouseWheelAndThemeAndQuit(t *testing.T) {
	m, _, _ := fixture(120, 40, "dark")
	m.Update(tea.MouseWheelMsg{Button: tea.MouseWheelDown})
	if selectedName(m) != "web-7d9c5b8f4-8mzq1" {
		t.Fatalf("wheel down selected %s", selectedName(m))
	}
	m.Update(tea.MouseWheelMsg{Button: tea.MouseWheelUp})
	if selectedName(m) != "web" {
		t.Fatalf("wheel up selected %s", selectedName(m))
	}
	// A click on the fifth lane's pull cell selects both.
	lay := m.pods.layout(m.store.Rows(), 120)
	m.Update(tea.MouseClickMsg{X: lay.left + 10*lay.cell + 1, Y: 3 + 4, Button: tea.MouseLeft})
	if selectedName(m) != "web-7d9c5b8f4-qv4tn" || m.selectedStage() != stages.Pull {
		t.Fatalf("click selected %s at %s", selectedName(m), m.selectedStage())
	}
	press(m, "t")
	if m.c.Theme.Name != "light" {
		t.Fatalf("t: theme %s, want light", m.c.Theme.Name)
	}
	_, cmd := m.Update(keyMsg("q"))
	if cmd == nil {
		t.Fatal("q returned no command")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Fatal("q does not quit")
	}
}

func TestResizeKeepsSelectionVisible(t *testing.T) {
	m, src, _ := fixture(120, 40, "dark")
	for i := range 200 {
		src.C <- stages.Event{Time: at(4000 + i), Namespace: "zz", Pod: "p-" + pad3(i), Stage: stages.Persist, Status: stages.Succeeded}
	}
	m.Update(frameMsg(time.Now()))
	press(m, "G")
	for _, size := range [][2]int{{80, 24}, {200, 60}, {100, 30}} {
		m.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		frame := m.Render()
		checkFrame(t, frame, size[0], size[1])
		if !strings.Contains(ansi.Strip(frame), "p-199") {
			t.Errorf("at %dx%d the selected last pod is not visible", size[0], size[1])
		}
	}
}

func pad3(i int) string {
	return string([]byte{byte('0' + i/100), byte('0' + i/10%10), byte('0' + i%10)})
}

func TestNoColorDrawsSymbolsWithoutColour(t *testing.T) {
	src := &FakeSource{SourceName: "embedded"}
	m := New(src, Options{NoColor: true, Now: func() time.Time { return t0 }})
	m.Update(winSize(120, 40))
	m.Fold(story()...)
	frame := m.Render()
	for _, code := range []string{"38;2;", "48;2;", "38;5;", "48;5;"} {
		if strings.Contains(frame, code) {
			t.Fatalf("NO_COLOR frame contains colour code %q", code)
		}
	}
	plain := ansi.Strip(frame)
	for _, sym := range []string{"✓", "↻", "⏸", "·"} {
		if !strings.Contains(plain, sym) {
			t.Errorf("NO_COLOR frame lacks state symbol %s", sym)
		}
	}
}

func TestAnySizeDrawsAFullFrame(t *testing.T) {
	for _, sc := range screens {
		m, _, _ := fixture(80, 24, "dark")
		press(m, sc.keys...)
		for _, size := range [][2]int{{1, 1}, {20, 5}, {39, 30}, {40, 8}, {50, 12}, {79, 23}, {81, 25}, {300, 90}} {
			m.Update(winSize(size[0], size[1]))
			checkFrame(t, m.Render(), size[0], size[1])
		}
	}
}

func TestClusterSourceShowsUnobservableStagesAndCoarseTimes(t *testing.T) {
	src := &FakeSource{SourceName: "cluster kind-kind", StatusFunc: func() Status {
		return Status{NodesReady: 1, NodesTotal: 1, ReadOnly: "read-only: attached to cluster kind-kind",
			Resolution: time.Second, Unobservable: []stages.ID{stages.Authn, stages.Authz, stages.Admission}}
	}}
	m := New(src, Options{Now: func() time.Time { return t0 }})
	m.Update(winSize(250, 40)) // cells wide enough for durations beside READY, RESTARTS and AGE
	done := stages.Event{Time: at(1300), Namespace: "default", Pod: "web-0", Stage: stages.Persist, Status: stages.Succeeded, DurationMs: 300}
	pulled := stages.Event{Time: at(5000), Namespace: "default", Pod: "web-0", Stage: stages.Pull, Status: stages.Succeeded, DurationMs: 2600}
	m.Fold(done, pulled)
	frame := ansi.Strip(m.Render())
	var row string
	for _, l := range strings.Split(frame, "\n") {
		if lane, _, _ := strings.Cut(l, "│"); strings.Contains(lane, "web-0") {
			row = lane // the lane, not the detail pane beside it
		}
	}
	if strings.Count(row, "–") != 3 {
		t.Errorf("want authn, authz and admission marked unobservable: %q", row)
	}
	if !strings.Contains(row, "✓<1s") || !strings.Contains(row, "✓3s") {
		t.Errorf("durations finer than the source's 1 s resolution: %q", row)
	}
	if !strings.Contains(frame, "cluster kind-kind") {
		t.Error("header does not name the cluster")
	}
}

func TestSchedulingMatrixShowsScoresAndChoice(t *testing.T) {
	m, _, _ := fixture(120, 40, "dark")
	r := &stages.SchedulingResult{Chosen: "node-2", Nodes: []stages.NodeVerdict{
		{Node: "node-1", Scores: map[string]int64{"NodeResourcesFit": 40, "ImageLocality": 0}, Total: 40},
		{Node: "node-2", Scores: map[string]int64{"NodeResourcesFit": 80, "ImageLocality": 10}, Total: 90},
		{Node: "node-3", Plugin: "TaintToleration", Reason: "node(s) had untolerated taint(s)"},
	}}
	out := ansi.Strip(strings.Join(schedulingMatrix(m, r, 110), "\n"))
	for _, want := range []string{"ImageLoc", "NodeRes", "✓ fits", "✗ TaintToleration: node(s) had untolerated taint(s)", "90", "▶ chosen"} {
		if !strings.Contains(out, want) {
			t.Errorf("matrix lacks %q:\n%s", want, out)
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "chosen") && !strings.HasPrefix(strings.TrimSpace(l), "node-2") {
			t.Errorf("chosen marker on the wrong node: %q", l)
		}
	}
}
