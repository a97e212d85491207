package tui

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/podtrace/podtrace/stages"
	"github.com/podtrace/podtrace/tui/lanes"
)

// podsPane draws the swimlanes.
type podsPane struct {
	c     *Common
	cache map[*lanes.Lane]laneCache
	// res and hidden come from the Source's Status: timestamp resolution and
	// the stages it cannot see (indexed like stages.Lifecycle).
	res    time.Duration
	hidden []bool
	// filter is the lane filter in force, to say when it matches nothing.
	filter string
	// readOnly is set when the Source takes no commands: no hint to apply.
	readOnly bool
}

// setStatus takes the Source's resolution and unobservable stages.
func (p *podsPane) setStatus(st Status) {
	p.readOnly = st.ReadOnly != ""
	hidden := make([]bool, len(stages.Lifecycle))
	for _, id := range st.Unobservable {
		if i := id.Index(); i >= 0 && i < len(hidden) {
			hidden[i] = true
		}
	}
	if !slices.Equal(hidden, p.hidden) || st.Resolution != p.res {
		p.hidden, p.res = hidden, st.Resolution
		clear(p.cache)
	}
}

// dur renders a duration no finer than the Source's resolution: "<1s" for
// what a one-second clock cannot tell apart from zero.
func (p *podsPane) dur(d time.Duration) string {
	if p.res <= 0 {
		return fmtDur4(d)
	}
	if p.res >= time.Second { // whole seconds: 3s, 2m, never 3.0s
		if d < p.res {
			return "<" + fmtAge(p.res)
		}
		return fmtAge(d.Round(p.res))
	}
	if d < p.res {
		return "<" + fmtDur4(p.res)
	}
	return fmtDur4(d.Round(p.res))
}

// laneCache is the drawn row of a lane that shows nothing time-dependent.
type laneCache struct {
	version uint64
	lay     laneLayout
	theme   string
	age     string
	row     string
}

// laneAge is kubectl's AGE: the time since the object was created (its
// first event when the source sends no objects), as kubectl prints it.
func laneAge(l *lanes.Lane, now time.Time) string {
	created := l.First
	if l.Object != nil && !l.Object.Created.IsZero() {
		created = l.Object.Created
	}
	if created.IsZero() {
		return ""
	}
	return duration.HumanDuration(max(0, now.Sub(created)))
}

func newPodsPane(c *Common) *podsPane {
	return &podsPane{c: c, cache: map[*lanes.Lane]laneCache{}}
}

// header draws the column titles.
func (p *podsPane) header(lay laneLayout) string {
	var b strings.Builder
	b.WriteString("  ")
	if lay.ns > 0 {
		b.WriteString(fit("NAMESPACE", lay.ns) + " ")
	}
	b.WriteString(fit("NAME", lay.name))
	b.WriteByte(' ')
	if lay.node > 0 {
		b.WriteString(fit("NODE", lay.node))
		b.WriteByte(' ')
	}
	if lay.ready > 0 {
		b.WriteString(fit("READY", lay.ready) + " ")
	}
	b.WriteString(fit("STATUS", lay.status))
	if lay.restarts > 0 {
		b.WriteString(fit("RESTARTS", lay.restarts) + " " + fit("AGE", lay.age) + " ")
	}
	if lay.stage > 0 {
		b.WriteString(fit("STAGE", lay.stage-1) + " ")
	}
	for _, id := range stages.Lifecycle[:lay.cells()] {
		label := string(id)
		if len(label) > lay.cell-1 {
			label = id.Describe().Medium
		}
		if len(label) > lay.cell-1 {
			label = id.Describe().Short
		}
		b.WriteString(fit(label, lay.cell-1))
		b.WriteByte(' ')
	}
	if lay.cause > 0 {
		b.WriteString(clip("CAUSE", lay.cause))
	}
	return p.c.Paint.S(pBold, b.String())
}

// row draws one lane; sel is the selected stage index, or -1 when the lane is not selected.
func (p *podsPane) row(l *lanes.Lane, lay laneLayout, sel int, now time.Time) string {
	pt := &p.c.Paint
	static := sel < 0 && !l.TimeDependent()
	age := ""
	if lay.age > 0 {
		age = laneAge(l, now)
	}
	if static {
		if c, ok := p.cache[l]; ok && c.version == l.Version && c.lay == lay && c.theme == p.c.Theme.Name && c.age == age {
			return c.row
		}
	}
	var b strings.Builder
	b.Grow(lay.width + 15*24)
	if sel >= 0 {
		b.WriteString(pt.S(pAccent, p.c.Theme.Symbols.Cursor+" "))
	} else {
		b.WriteString("  ")
	}
	prefix := p.prefix(l)
	left := fit(prefix+midTrunc(l.Name, lay.name-ansi.StringWidth(prefix)), lay.name) + " "
	if lay.ns > 0 {
		left = fit(l.Namespace, lay.ns) + " " + left
	}
	if lay.node > 0 {
		left += fit(l.Node, lay.node) + " "
	}
	status := l.Status
	if len(status) > lay.status-1 && l.Kind != stages.KindPod {
		status = strings.TrimSuffix(status, " ready") // "75/200", as kubectl's READY column
	}
	st := fit(status, lay.status-1)
	if sel >= 0 {
		b.WriteString(pt.S(pSelected, left))
	} else if l.Kind != stages.KindPod {
		b.WriteString(pt.S(pMuted, left))
	} else {
		b.WriteString(left)
	}
	if lay.ready > 0 {
		ready := ""
		if l.Object != nil {
			ready = l.Object.Ready
		}
		b.WriteString(pt.S(lanePaint(l), fit(ready, lay.ready)) + " ")
	}
	b.WriteString(pt.S(lanePaint(l), st))
	b.WriteByte(' ')
	if lay.restarts > 0 {
		restarts := ""
		if l.Kind == stages.KindPod {
			restarts = strconv.Itoa(l.Restarts())
		}
		b.WriteString(fit(restarts, lay.restarts) + " " + pt.S(pMuted, fit(age, lay.age)) + " ")
	}
	text, paint := p.cause(l)
	stop := lay.cells()
	if lay.stage > 0 {
		p.stageCell(&b, l, sel, now)
	} else if ansi.StringWidth(text) > lay.cause {
		// Too long for CAUSE: start it after the last reached cell (the
		// cells after it say nothing yet), and after the selected one.
		j := max(lastReached(l), sel) + 1
		if j < stop {
			stop = j
		}
	}
	p.cells(&b, l, lay, sel, stop, now)
	if text != "" {
		avail := (lay.cells()-stop)*lay.cell + lay.cause
		if reason, msg := l.Cause(); reason != "" && msg != "" && ansi.StringWidth(text) > avail {
			text = msg // the message's words say more than the reason's
		}
		b.WriteString(pt.S(paint, cutCause(text, avail)))
	}
	row := b.String()
	if static {
		p.cache[l] = laneCache{version: l.Version, lay: lay, theme: p.c.Theme.Name, age: age, row: row}
	}
	return row
}

// prefix is what precedes a lane's name: its depth in the tree and its kind.
func (p *podsPane) prefix(l *lanes.Lane) string {
	prefix := spaces(l.Depth)
	switch l.Kind {
	case stages.KindDeployment:
		prefix += p.c.Theme.Symbols.Expanded + " deploy/"
	case stages.KindReplicaSet:
		prefix += p.c.Theme.Symbols.Expanded + " rs/"
	}
	return prefix
}

// midTrunc shortens an ASCII name to w by cutting its middle, keeping the
// start and the distinguishing suffix: web-7d…f4-2xk9p.
func midTrunc(s string, w int) string {
	if len(s) <= w || w < 5 {
		return s
	}
	tail := (w - 1) * 3 / 5
	head := w - 1 - tail
	return s[:head] + "…" + s[len(s)-tail:]
}

// lanePaint is the paint of a lane's STATUS: owners are done when all their
// pods are ready.
func lanePaint(l *lanes.Lane) int {
	switch l.Phase {
	case "Ready":
		return pDone
	case "Progressing":
		return pMuted
	}
	return statusPaint(l.Status)
}

func statusPaint(s string) int {
	switch s {
	case "Running", "Reconciled":
		return pDone
	case "Pending", "ContainerCreating", "Terminating", "Deleted":
		return pMuted
	}
	return pFailed
}

// cause is the lane's problem as its row says it ("reason: message", or the
// message alone when STATUS already gives the reason) and the paint of its
// stage's state.
func (p *podsPane) cause(l *lanes.Lane) (string, int) {
	reason, msg := l.Cause()
	text := msg
	switch {
	case reason != "" && msg != "":
		text = reason + ": " + msg
	case msg == "":
		text = reason
	}
	if text == "" {
		return "", pText
	}
	i := l.Problem()
	if i < 0 { // an owner's refused create
		return text, pFailed
	}
	switch l.Cells[i].State {
	case lanes.Failed:
		return text, pFailed
	case lanes.Waiting:
		return text, pWaiting
	}
	return text, pRetrying
}

// lastReached is the index of the lane's last stage that has begun, or -1.
func lastReached(l *lanes.Lane) int {
	for i := len(stages.Lifecycle) - 1; i >= 0; i-- {
		if l.Cells[i].State != lanes.NotReached {
			return i
		}
	}
	return -1
}

// cells draws the lane's first stop stage cells.
func (p *podsPane) cells(b *strings.Builder, l *lanes.Lane, lay laneLayout, sel, stop int, now time.Time) {
	pt := &p.c.Paint
	for i := range stages.Lifecycle[:stop] {
		sym, rest, paint := p.cellAt(l, i, lay.cell-1, now)
		rest = fit(rest, lay.cell-2) // symbols are one cell wide (themes tests it)
		if i == sel {
			paint = pSelCell
		}
		b.WriteString(pt.open[paint])
		b.WriteString(sym)
		b.WriteString(rest)
		b.WriteString(pt.close[paint])
		b.WriteByte(' ')
	}
}

// cellAt is the symbol, text and paint of the lane's i-th stage cell in w
// cells.
func (p *podsPane) cellAt(l *lanes.Lane, i, w int, now time.Time) (string, string, int) {
	c := &l.Cells[i]
	if i == startIndex && c.Attempt > 0 {
		// The start cell counts restarts, as kubectl's RESTARTS does.
		cp := *c
		cp.Attempt = l.Restarts()
		c = &cp
	}
	if i < len(p.hidden) && p.hidden[i] && c.State == lanes.NotReached {
		return p.c.Theme.Symbols.Unobservable, "", pMuted
	}
	return p.cellParts(c, w, now)
}

// stageCell draws the STAGE column of a compact row: the selected stage,
// else the one in trouble, else the last one reached, as its cell's
// symbol (and retry count) and its name.
func (p *podsPane) stageCell(b *strings.Builder, l *lanes.Lane, sel int, now time.Time) {
	i := sel
	if i < 0 {
		i = l.Problem()
	}
	if i < 0 {
		i = lastReached(l)
	}
	if i < 0 {
		b.WriteString(p.c.Paint.S(pPending, fit(p.c.Theme.Symbols.Pending, stageColumn-1)) + " ")
		return
	}
	sym, rest, paint := p.cellAt(l, i, 2, now)
	if i == sel {
		paint = pSelCell
	}
	b.WriteString(p.c.Paint.S(paint, fit(sym+rest+" "+string(stages.Lifecycle[i]), stageColumn-1)))
	b.WriteByte(' ')
}

// startIndex is the start stage's index in stages.Lifecycle.
var startIndex = stages.Start.Index()

// cellText is what a cell says in w cells, and its paint.
func (p *podsPane) cellText(c *lanes.Cell, w int, now time.Time) (string, int) {
	sym, rest, paint := p.cellParts(c, w, now)
	return sym + rest, paint
}

// cellParts is a cell's symbol, the text after it, and its paint.
func (p *podsPane) cellParts(c *lanes.Cell, w int, now time.Time) (string, string, int) {
	sy := &p.c.Theme.Symbols
	wide := w >= 4
	switch c.State {
	case lanes.InProgress:
		frame := sy.Spinner[int(now.UnixMilli()/100)%len(sy.Spinner)]
		if !wide {
			return frame, "", pRunning
		}
		return frame, p.dur(now.Sub(c.Start)), pRunning
	case lanes.Done:
		if !wide {
			return sy.Done, "", pDone
		}
		return sy.Done, p.dur(c.Duration), pDone
	case lanes.Failed:
		if !wide {
			return sy.Failed, "", pFailed
		}
		return sy.Failed, c.Reason, pFailed
	case lanes.Retrying:
		if !wide {
			if c.Attempt > 0 && c.Attempt < 10 {
				return sy.Retrying, strconv.Itoa(c.Attempt), pRetrying
			}
			return sy.Retrying, "", pRetrying
		}
		if c.NextTry.IsZero() {
			return sy.Retrying, strconv.Itoa(c.Attempt), pRetrying
		}
		// Attempt and countdown when both fit, else the countdown.
		a, cd := strconv.Itoa(c.Attempt), p.dur(c.NextTry.Sub(now))
		if 1+len(a)+1+len(cd) <= w {
			return sy.Retrying, a + " " + cd, pRetrying
		}
		return sy.Retrying, cd, pRetrying
	case lanes.Waiting:
		if !wide {
			return sy.Waiting, "", pWaiting
		}
		if c.Reason == "Breakpoint" {
			if w >= 6 {
				return sy.Waiting, "break", pWaiting
			}
			return sy.Waiting, "held", pWaiting
		}
		return sy.Waiting, p.dur(now.Sub(c.Start)), pWaiting
	}
	return sy.Pending, "", pPending
}

// view draws the header line and the visible lanes, rows top..top+h-1.
func (p *podsPane) view(rows []*lanes.Lane, width, h, top, selRow, selStage int, now time.Time) []string {
	lay := p.layout(rows, width)
	out := make([]string, 0, h)
	out = append(out, p.header(lay))
	if len(rows) == 0 {
		msg := "  No pods yet. Press a to launch a demo workload or apply a manifest."
		if p.readOnly {
			msg = "  No pods yet."
		}
		if p.filter != "" {
			msg = "  No lane matches the filter \"" + p.filter + "\" (esc clears it)."
		}
		out = append(out, "", p.c.Paint.S(pMuted, msg))
		return out
	}
	for i := top; i < len(rows) && len(out) < h; i++ {
		sel := -1
		if i == selRow {
			sel = selStage
		}
		out = append(out, p.row(rows[i], lay, sel, now))
	}
	if len(p.cache) > 4*len(rows)+64 {
		p.cache = map[*lanes.Lane]laneCache{} // lanes were dropped: start over
	}
	return out
}
