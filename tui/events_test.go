package tui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/podtrace/podtrace/stages"
)

// kubeSource is a FakeSource that also delivers Kubernetes Events.
type kubeSource struct {
	*FakeSource
	K chan K8sEvent
}

func (k kubeSource) KubeEvents() <-chan K8sEvent { return k.K }

func TestEventsPaneShowsTheClustersOwnEvents(t *testing.T) {
	wall := t0
	src := kubeSource{FakeSource: &FakeSource{C: make(chan stages.Event, 10)}, K: make(chan K8sEvent, 10)}
	m := New(src, Options{Now: func() time.Time { return wall }})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	m.Update(tea.KeyPressMsg{Code: 'e', Text: "e"})

	// A stage event with a reason is not an Event of the cluster: once the
	// Source delivers real ones, only those are listed.
	src.C <- stages.Event{Time: t0, Namespace: "default", Pod: "web-1", Stage: stages.Pull, Status: stages.Waiting,
		Reason: "Breakpoint", Message: "held before pull"}
	backoff := K8sEvent{Namespace: "default", Name: "web-1.1800a", Object: "pod/web-1", Type: "Warning",
		Reason: "BackOff", Message: `Back-off pulling image "ngnix:1.27"`, Count: 1, LastSeen: t0}
	src.K <- K8sEvent{Namespace: "default", Name: "web.17f", Object: "deployment/web", Type: "Normal",
		Reason: "ScalingReplicaSet", Message: "Scaled up replica set web-7d9c to 3 from 0", Count: 1, LastSeen: t0}
	src.K <- backoff
	wall = wall.Add(time.Second)
	m.Update(frameMsg(wall))
	s := ansi.Strip(m.Render())
	for _, want := range []string{"ScalingReplicaSet", "deployment/web", "Scaled up replica set web-7d9c to 3 from 0",
		"Warning", "BackOff", "pod/web-1"} {
		if !strings.Contains(s, want) {
			t.Fatalf("events pane lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "Breakpoint") {
		t.Fatalf("a stage event's reason is listed among the cluster's Events:\n%s", s)
	}

	// A repeat of the same Event updates its line: one line, counted.
	backoff.Count, backoff.LastSeen = 3, t0.Add(20*time.Second)
	src.K <- backoff
	wall = wall.Add(time.Second)
	m.Update(frameMsg(wall))
	s = ansi.Strip(m.Render())
	if n := strings.Count(s, "Back-off pulling image"); n != 1 {
		t.Fatalf("the repeated Event is listed %d times:\n%s", n, s)
	}
	if !strings.Contains(s, "(x3)") {
		t.Fatalf("the repeated Event does not show its count:\n%s", s)
	}
}

// Stage events' reasons are podtrace's, not Kubernetes Events: a Source
// without Kubernetes Events lists none, and says so.
func TestEventsPaneNeverListsStageReasons(t *testing.T) {
	src := &FakeSource{C: make(chan stages.Event, 10)}
	m := New(src, Options{Now: func() time.Time { return t0 }})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	m.Update(tea.KeyPressMsg{Code: 'e', Text: "e"})
	src.C <- stages.Event{Time: t0, Namespace: "default", Pod: "web-1", Stage: stages.Start, Status: stages.Retrying,
		Reason: "CrashLoopBackOff", Message: "back-off 10s restarting failed container"}
	m.Update(frameMsg(t0))
	s := ansi.Strip(m.Render())
	if strings.Contains(s, "Warning") || strings.Contains(s, "back-off 10s") {
		t.Fatalf("a stage event's reason is listed as a Kubernetes Event:\n%s", s)
	}
	if !strings.Contains(s, "No Kubernetes Events") {
		t.Fatalf("the empty events pane does not say why:\n%s", s)
	}
}

// g and G on the pods screen move the lane selection; the events strip
// below keeps following the newest events.
func TestTopKeyOnPodsKeepsEventsStripFollowing(t *testing.T) {
	src := &FakeSource{C: make(chan stages.Event, 100), K: make(chan K8sEvent, 100)}
	m := New(src, Options{Now: func() time.Time { return t0 }})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	add := func(from, to int) {
		for i := from; i < to; i++ {
			src.C <- stages.Event{Time: t0, Namespace: "default", Pod: "p" + itoa(i), Stage: stages.Bind,
				Status: stages.Succeeded, Reason: "Scheduled", Message: "event " + itoa(i)}
			src.K <- K8sEvent{Namespace: "default", Name: "p" + itoa(i) + ".1", Object: "pod/p" + itoa(i), Type: "Normal",
				Reason: "Scheduled", Message: "event " + itoa(i), LastSeen: t0.Add(time.Duration(i) * time.Millisecond)}
		}
		m.Update(frameMsg(t0))
	}
	add(0, 20)
	m.Update(tea.KeyPressMsg{Code: 'g', Text: "g"})
	add(20, 40)
	s := ansi.Strip(m.Render())
	if !strings.Contains(s, "event 39") {
		t.Fatalf("after g on the pods screen the events strip stopped at old events:\n%s", s)
	}
	if sel := m.selected(); sel == nil || sel.Name != "p0" {
		t.Fatalf("g did not select the first lane: %+v", sel)
	}
}

// The Events tab lists Events by LAST SEEN; the strip under the lanes puts
// the Warnings first; j/k/g/G move a cursor and enter shows an Event whole.
func TestEventsOrderWarningsFirstAndCursor(t *testing.T) {
	m, _, _ := fixture(120, 40, "dark")
	lines := strings.Split(ansi.Strip(m.Render()), "\n")
	strip := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "LAST SEEN") {
			strip = i
		}
	}
	if strip < 0 || !strings.Contains(lines[strip+1], "Warning") || !strings.Contains(lines[strip+2], "Warning") {
		t.Fatalf("the strip does not list its Warnings first:\n%s", strings.Join(lines[max(0, strip):], "\n"))
	}
	press(m, "e")
	all := m.log.sorted()
	for i := 1; i < len(all); i++ {
		if all[i].time.Before(all[i-1].time) {
			t.Fatalf("Events out of LAST SEEN order at %d: %v after %v", i, all[i].time, all[i-1].time)
		}
	}
	press(m, "g")
	if e := m.selectedEvent(); e == nil || e.reason != "ScalingReplicaSet" {
		t.Fatalf("g selected %+v, want the oldest Event", e)
	}
	press(m, "j", "G", "k", "k", "k", "k", "enter")
	s := ansi.Strip(m.Render())
	for _, want := range []string{"Object      pod/web-7d9c5b8f4-8mzq1", "Count       3", "First seen", "Last seen", "docker.io/library/nginx:1.277: not found"} {
		if !strings.Contains(s, want) {
			t.Fatalf("enter on an Event does not show %q:\n%s", want, s)
		}
	}
	press(m, "x")
	if m.overlay != nil {
		t.Fatal("a key does not close the Event")
	}
}

// Ages read as kubectl prints them (HumanDuration), never negative, and
// "<unknown>" for no time at all.
func TestAgeText(t *testing.T) {
	now := t0.Add(time.Hour)
	for _, tc := range []struct {
		name string
		t    time.Time
		want string
	}{
		{"just now", now, "0s"},
		{"seconds", now.Add(-45 * time.Second), "45s"},
		{"under two minutes, in seconds", now.Add(-95 * time.Second), "95s"},
		{"minutes and seconds", now.Add(-(3*time.Minute + 20*time.Second)), "3m20s"},
		{"minutes", now.Add(-25 * time.Minute), "25m"},
		{"hours and minutes", now.Add(-(4*time.Hour + 5*time.Minute)), "4h5m"},
		{"days", now.Add(-50 * time.Hour), "2d2h"},
		{"another machine's clock ahead", now.Add(24 * time.Second), "0s"},
		{"no time", time.Time{}, "<unknown>"},
	} {
		if got := ago(now, tc.t); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	for d, want := range map[time.Duration]string{-3 * time.Second: "0s", 59 * time.Second: "59s", 3 * time.Minute: "3m",
		23 * time.Hour: "23h", 49 * time.Hour: "2d"} {
		if got := fmtAge(d); got != want {
			t.Errorf("fmtAge(%v) = %q, want %q", d, got, want)
		}
	}
}

// Attached to a real cluster (a Source on the wall clock, without clock
// controls), the stage events that arrive first are its history: ages are
// counted from the wall clock, not from the newest of them, so an Event 6 s
// old reads 6s (not -24s when the newest stage was 30 s old), an Event a
// few seconds ahead (the cluster's clock) 0s, an Event with no time
// <unknown>.
func TestAgesOnAnAttachedClusterFollowTheWallClock(t *testing.T) {
	wall := t0.Add(time.Hour)
	src := kubeSource{FakeSource: &FakeSource{C: make(chan stages.Event, 10)}, K: make(chan K8sEvent, 10)}
	m := New(src, Options{Now: func() time.Time { return wall }})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	m.Update(tea.KeyPressMsg{Code: 'e', Text: "e"})
	src.C <- stages.Event{Time: wall.Add(-30 * time.Second), Namespace: "shop", Pod: "web-1", Stage: stages.Pull,
		Status: stages.Succeeded, Reason: "Pulled"}
	for i, ev := range []struct {
		reason string
		last   time.Time
	}{{"Scheduled", time.Time{}}, {"Pulled", wall.Add(-6 * time.Second)}, {"Started", wall.Add(4 * time.Second)}} {
		src.K <- K8sEvent{Namespace: "shop", Name: "web-1." + itoa(i), Object: "pod/web-1", Type: "Normal",
			Reason: ev.reason, Message: ev.reason + " message", Count: 1, LastSeen: ev.last}
	}
	m.Update(frameMsg(wall))
	s := ansi.Strip(m.Render())
	for reason, want := range map[string]string{"Scheduled": "<unknown>", "Pulled": "6s", "Started": "0s"} {
		if got := lastSeenOf(s, reason); got != want {
			t.Errorf("LAST SEEN of %s: %q, want %q:\n%s", reason, got, want, s)
		}
	}
}

// lastSeenOf is the LAST SEEN of the events pane's line of reason.
func lastSeenOf(frame, reason string) string {
	for _, l := range strings.Split(frame, "\n") {
		if f := strings.Fields(l); len(f) > 2 && f[1] == "Normal" && f[2] == reason {
			return f[0]
		}
	}
	return ""
}
