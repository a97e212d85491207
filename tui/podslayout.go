package tui

import (
	"github.com/charmbracelet/x/ansi"

	"github.com/podtrace/podtrace/stages"
	"github.com/podtrace/podtrace/tui/lanes"
)

// laneLayout is the column geometry of the pods pane at one width.
type laneLayout struct {
	width              int
	cell               int // width of one stage cell, separator included
	name, node, status int
	left               int // everything before the first cell
	cause              int // the CAUSE column after the cells (0: none)
	ns                 int // the NAMESPACE column (0: none)
	// READY before STATUS, RESTARTS and AGE after it, as kubectl prints
	// them (0: none, on terminals under objectColumnsWidth).
	ready, restarts, age int
	// stage is the STAGE column's width, its separator included, on
	// terminals under compactWidth: one stage in place of every cell
	// (cell is then 0).
	stage int
}

// compactWidth is the terminal width below which one STAGE column (the
// selected stage, else the one in trouble, else the last reached) takes
// the place of the fifteen stage cells: NAME, STATUS and CAUSE win.
const compactWidth = 110

// stageColumn is the STAGE column's width, its separator included: a
// symbol, a retry count and the longest stage name ("↻3 admission").
const stageColumn = 1 + 1 + 1 + len("admission") + 1

// minCompactCause is what CAUSE keeps before names yield, under compactWidth.
const minCompactCause = 20

// objectColumnsWidth is the terminal width from which the rows also show
// kubectl's READY, RESTARTS and AGE columns.
const objectColumnsWidth = 130

// cells is how many stage cells a row draws: every stage, or none when
// one STAGE column stands in for them.
func (l laneLayout) cells() int {
	if l.stage > 0 {
		return 0
	}
	return len(stages.Lifecycle)
}

// objectColumns is the width READY, RESTARTS and AGE take, separators included.
func (l laneLayout) objectColumns() int {
	w := 0
	for _, c := range []int{l.ready, l.restarts, l.age} {
		if c > 0 {
			w += c + 1
		}
	}
	return w
}

// laneWants is how wide the rows would like the columns: the longest
// namespace (0 when all rows share one), name (with its tree prefix) and
// status.
type laneWants struct{ ns, name, status int }

// Column bounds: STATUS (its separator included) holds ContainerCreating
// and PostStartHookError whole when there is room; on wide terminals CAUSE keeps at least minCause
// cells before names are cut, and cells grow (to show durations) only past
// a roomy CAUSE column.
const (
	maxStatus   = len("PostStartHookError") + 1
	minName     = 12
	minCause    = 24
	roomyCause  = 48
	maxCellWide = 8
	// minStatusName is the NAME width below which STATUS is cut rather
	// than names (80 columns keep both).
	minStatusName = 10
)

// newLaneLayout sizes the columns for width cells from what the rows want:
// the longest name (with its tree prefix) and the longest status. Stage
// cells are three cells wide (a symbol and a digit) unless the names,
// statuses and a roomy CAUSE column leave more; CAUSE gets the rest.
//
// STATUS is whole down to 80 columns: names yield first.
//
// Under compactWidth one STAGE column replaces the cells (newCompactLayout).
//
// When the rows span namespaces (attach -A), a NAMESPACE column (want.ns
// wide, at most 20) comes first.
func newLaneLayout(width int, want laneWants) laneLayout {
	if width < compactWidth {
		return newCompactLayout(width, want)
	}
	n := len(stages.Lifecycle)
	l := laneLayout{width: width, cell: 3}
	wantName := max(want.name, minName)
	l.status = min(max(want.status+1, len("STATUS")+1), maxStatus)
	if want.ns > 0 {
		l.ns = min(max(want.ns, len("NAMESPACE")), 20)
	}
	// STATUS stays whole (kubectl never cuts it) while names keep
	// minStatusName cells; only narrower than that does it yield.
	if room := width - n*l.cell - 3 - l.ns - minStatusName; l.ns > 0 {
		l.status = max(len("STATUS")+1, min(l.status, room-1))
	} else {
		l.status = max(len("STATUS")+1, min(l.status, room))
	}
	if width >= objectColumnsWidth {
		l.ready, l.restarts, l.age = len("READY")+1, len("RESTARTS"), len("AGE")+2
	}
	fixed := 2 + 1 + l.status + l.objectColumns() // cursor, the separator after NAME, STATUS, READY, ...
	if l.ns > 0 {
		fixed += l.ns + 1
	}
	if spare := width - n*l.cell - fixed - wantName - roomyCause; spare >= n {
		l.cell = min(maxCellWide, l.cell+spare/n)
	}
	room := width - n*l.cell - fixed // for NAME, NODE and CAUSE
	l.name = max(min(wantName, room-minCause), min(minName, room))
	l.cause = room - l.name
	if l.cause >= 12+1+minCause { // a NODE column fits too
		l.node = 12
		l.cause -= l.node + 1
	}
	l.left = fixed + l.name
	if l.node > 0 {
		l.left += l.node + 1
	}
	return l
}

// newCompactLayout sizes the columns under compactWidth: NAMESPACE (when
// the rows span several), NAME, STATUS, one STAGE column and CAUSE. Names
// are whole while CAUSE keeps minCompactCause cells; STATUS is whole
// while names keep minStatusName.
func newCompactLayout(width int, want laneWants) laneLayout {
	l := laneLayout{width: width, stage: stageColumn}
	if want.ns > 0 {
		l.ns = min(max(want.ns, len("NAMESPACE")), 20)
	}
	fixed := 2 + 1 + l.stage // cursor, the separator after NAME, STAGE
	if l.ns > 0 {
		fixed += l.ns + 1
	}
	l.status = min(max(want.status+1, len("STATUS")+1), maxStatus)
	l.status = max(len("STATUS")+1, min(l.status, width-fixed-minStatusName))
	fixed += l.status
	room := width - fixed // for NAME and CAUSE
	wantName := max(want.name, minName)
	l.name = max(min(wantName, room-minCompactCause), min(minStatusName, room, wantName))
	l.cause = max(0, room-l.name)
	l.left = fixed - l.stage + l.name
	return l
}

// whole reports whether rows drawn at width show every name and every
// cause (up to a roomy CAUSE column) without cutting them.
func (p *podsPane) whole(rows []*lanes.Lane, width int) bool {
	lay := p.layout(rows, width)
	if lay.name < p.wants(rows).name || lay.cause == 0 {
		return false
	}
	for _, l := range rows {
		if text, _ := p.cause(l); min(ansi.StringWidth(text), roomyCause) > lay.cause {
			return false
		}
	}
	return true
}

// layout sizes the columns for rows at width.
func (p *podsPane) layout(rows []*lanes.Lane, width int) laneLayout {
	return newLaneLayout(width, p.wants(rows))
}

// wants is how wide the rows would like the columns at width.
func (p *podsPane) wants(rows []*lanes.Lane) laneWants {
	var want laneWants
	multiNS := false
	for _, l := range rows {
		if l.Namespace != rows[0].Namespace {
			multiNS = true
		}
		want.ns = max(want.ns, len(l.Namespace))
		w := l.Depth + len(l.Name) // symbols are one cell wide (themes tests it)
		switch l.Kind {
		case stages.KindDeployment:
			w += len("> deploy/")
		case stages.KindReplicaSet:
			w += len("> rs/")
		}
		want.name = max(want.name, w)
		want.status = max(want.status, len(l.Status))
	}
	if !multiNS {
		want.ns = 0
	}
	return want
}
