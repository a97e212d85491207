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
}

// objectColumnsWidth is the terminal width from which the rows also show
// kubectl's READY, RESTARTS and AGE columns.
const objectColumnsWidth = 130

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
// status, and what the longest cause lacks after its unreached cells.
type laneWants struct{ ns, name, status, cause int }

// Column bounds: STATUS (its separator included) holds ContainerCreating
// whole when there is room; on wide terminals CAUSE keeps at least minCause
// cells before names are cut, and cells grow (to show durations) only past
// a roomy CAUSE column.
const (
	maxStatus   = len("ContainerCreating") + 1
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
// Below 110 columns there is no room for a CAUSE column beside whole names:
// a row's cause then also runs over its unreached cells, and names yield (down
// to minStatusName) what the longest cause still lacks (want.cause).
//
// When the rows span namespaces (attach -A), a NAMESPACE column (want.ns
// wide, at most 20) comes first.
func newLaneLayout(width int, want laneWants) laneLayout {
	n := len(stages.Lifecycle)
	l := laneLayout{width: width, cell: 3}
	wantName, wantCause := max(want.name, minName), want.cause
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
	l.name = min(wantName, room)
	if width < 110 {
		l.name = max(min(wantName, room-wantCause), min(minStatusName, room, wantName))
	} else {
		l.name = max(min(wantName, room-minCause), min(minName, room))
	}
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

// whole reports whether rows drawn at width show every name and every
// cause (up to a roomy CAUSE column) without cutting them.
func (p *podsPane) whole(rows []*lanes.Lane, width int) bool {
	lay := p.layout(rows, width)
	if lay.name < p.wants(rows, width).name || lay.cause == 0 {
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
	return newLaneLayout(width, p.wants(rows, width))
}

// wants is how wide the rows would like the columns at width.
func (p *podsPane) wants(rows []*lanes.Lane, width int) laneWants {
	var want laneWants
	multiNS := false
	for _, l := range rows {
		if l.Namespace != rows[0].Namespace {
			multiNS = true
		}
		want.ns = max(want.ns, len(l.Namespace))
		if width < 110 && l.Failing() {
			// What its cause lacks after its unreached cells.
			_, msg := l.Cause()
			want.cause = max(want.cause, len(msg)-(len(stages.Lifecycle)-lastReached(l)-1)*3)
		}
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
