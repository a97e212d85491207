package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/podtrace/podtrace/stages"
)

// The engine's scheduler scores with three plugins whose names start alike:
// each column must stay tellable from the others at any width.
func TestSchedulingMatrixLabelsScoreColumnsDistinctly(t *testing.T) {
	m, _, _ := fixture(120, 40, "dark")
	scores := func(b, f, tt int64) map[string]int64 {
		return map[string]int64{"NodeResourcesBalancedAllocation": b, "NodeResourcesFit": f, "TaintToleration": tt}
	}
	r := &stages.SchedulingResult{Chosen: "node-2", Nodes: []stages.NodeVerdict{
		{Node: "node-1", Scores: scores(96, 74, 300), Total: 470},
		{Node: "node-2", Scores: scores(98, 74, 300), Total: 472},
	}}
	tests := []struct {
		width     int
		header    []string
		legend    string
		notHeader string
	}{
		{width: 140, header: []string{"NodeResourcesBalancedAllocation", "NodeResourcesFit", "TaintToleration", "TOTAL"},
			legend: "score plugins: NodeResourcesBalancedAllocation, NodeResourcesFit, TaintToleration"},
		{width: 76, header: []string{"Balanced", "Fit", "Taint", "TOTAL"},
			legend: "scores: Balanced = NodeResourcesBalancedAllocation, Fit = NodeResourcesFit", notHeader: "…"},
	}
	for _, tt := range tests {
		lines := strings.Split(ansi.Strip(strings.Join(schedulingMatrix(m, r, tt.width), "\n")), "\n")
		for _, want := range tt.header {
			if !strings.Contains(lines[0], want) {
				t.Errorf("width %d: header %q lacks %q", tt.width, lines[0], want)
			}
		}
		if tt.notHeader != "" && strings.Contains(lines[0], tt.notHeader) {
			t.Errorf("width %d: header %q has truncated labels", tt.width, lines[0])
		}
		if flat := strings.Join(strings.Fields(strings.Join(lines, " ")), " "); !strings.Contains(flat, tt.legend) {
			t.Errorf("width %d: no legend %q:\n%s", tt.width, tt.legend, strings.Join(lines, "\n"))
		}
		chosen := lines[2]
		if !strings.Contains(chosen, "472") || !strings.Contains(chosen, "chosen") || !strings.Contains(chosen, "98") {
			t.Errorf("width %d: node-2's row lacks its scores or the choice: %q", tt.width, chosen)
		}
		for _, l := range lines {
			if ansi.StringWidth(l) > tt.width {
				t.Errorf("width %d: line wider than the pane: %q", tt.width, l)
			}
		}
	}
}

// Enter on an owner whose pod's create was refused shows the refusal in
// full: who asked, with what verb, the API server's whole 403, and when the
// controller tries again.
func TestDetailShowsARefusedCreate(t *testing.T) {
	quota := `pods "shop-7d9c-x1" is forbidden: exceeded quota: compute-resources, requested: requests.cpu=500m, used: requests.cpu=1800m, limited: requests.cpu=2`
	m := New(&FakeSource{}, Options{Now: func() time.Time { return at(5000) }})
	m.Update(winSize(120, 40))
	refused := stages.Event{Time: at(200), Namespace: "shop", Pod: "shop-7d9c-x1", Stage: stages.Admission, Status: stages.Failed,
		Component: "kube-apiserver", User: "system:serviceaccount:kube-system:replicaset-controller", Verb: "create",
		Reason: "Forbidden", Message: quota}
	m.Fold(stages.Event{Time: at(0), Kind: stages.KindReplicaSet, Namespace: "shop", Pod: "shop-7d9c", Stage: stages.Persist, Status: stages.Succeeded},
		stages.Event{Time: at(100), Namespace: "shop", Pod: "shop-7d9c-x1", Stage: stages.Authn, Status: stages.Succeeded},
		refused)
	next := at(46000)
	m.Fold(stages.Event{Time: at(210), Namespace: "shop", Pod: "shop-7d9c-x1", Stage: stages.Reconcile, Status: stages.Retrying,
		Component: "replicaset-controller", Reason: "FailedCreate", Message: "Error creating: " + quota, NextTry: &next})
	press(m, "enter")
	frame := ansi.Strip(m.Render())
	for _, want := range []string{"A pod's create refused", "FailedCreate", "user system:serviceaccount:kube-system:replicaset-controller",
		"verb create pods", "exceeded quota: compute-resources", "Next try in 41s", "replicaset-controller's workqueue back-off"} {
		if !strings.Contains(strings.Join(strings.Fields(frame), " "), want) {
			t.Errorf("the detail lacks %q:\n%s", want, frame)
		}
	}
}

// A stage an attached cluster's own spans timed says so, where one from
// Events says how coarse its timestamps are.
func TestDetailSaysWhichStagesCameFromSpans(t *testing.T) {
	for _, tt := range []struct {
		source, want, not string
	}{
		{stages.SourceSpans, "Started 12:00:00.100 took 1ms (from the cluster's own spans)", "timestamps to"},
		{"", "(timestamps to 1", "own spans"},
	} {
		src := &FakeSource{StatusFunc: func() Status { return Status{Resolution: time.Second} }}
		m := New(src, Options{Now: func() time.Time { return at(5000) }})
		m.Update(winSize(120, 40))
		ev := stages.Event{Time: at(100), Namespace: "shop", Pod: "web-1", Stage: stages.Authn, Status: stages.Started,
			Component: "kube-apiserver", Source: tt.source}
		done := ev
		done.Time, done.Status, done.DurationMs = at(101), stages.Succeeded, 1
		m.Fold(ev, done)
		press(m, "enter")
		frame := strings.Join(strings.Fields(ansi.Strip(m.Render())), " ")
		if !strings.Contains(frame, tt.want) || strings.Contains(frame, tt.not) {
			t.Errorf("source %q: the detail should say %q and not %q:\n%s", tt.source, tt.want, tt.not, frame)
		}
	}
}
