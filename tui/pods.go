package tui

import (
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/podtrace/podtrace/stages"
	"github.com/podtrace/podtrace/tui/lanes"
)

// shortNames label the stage columns when cells are narrow.
var shortNames = map[stages.ID]string{
	stages.Authn: "au", stages.Authz: "az", stages.Admission: "ad", stages.Persist: "pe",
	stages.Reconcile: "rc", stages.Schedule: "sc", stages.Bind: "bi", stages.Kubelet: "kl",
	stages.Sandbox: "sb", stages.CNI: "cn", stages.Pull: "pl", stages.Create: "cr",
	stages.Start: "st", stages.Hooks: "hk", stages.Ready: "rd",
}

// medNames label the stage columns when full names do not fit.
var medNames = map[stages.ID]string{
	stages.Authn: "autn", stages.Authz: "autz", stages.Admission: "adm", stages.Persist: "pers",
	stages.Reconcile: "rec", stages.Schedule: "schd", stages.Bind: "bind", stages.Kubelet: "kubl",
	stages.Sandbox: "sbox", stages.CNI: "cni", stages.Pull: "pull", stages.Create: "crea",
	stages.Start: "strt", stages.Hooks: "hook", stages.Ready: "rdy",
}

// laneLayout is the column geometry of the pods pane at one width.
type laneLayout struct {
	width              int
	cell               int // width of one stage cell, separator included
	name, node, status int
	left               int // everything before the first cell
}

func newLaneLayout(width int) laneLayout {
	n := len(stages.Lifecycle)
	l := laneLayout{width: width}
	switch {
	case width < 110:
		l.cell = 3
	case width < 140:
		l.cell = (width - 30) / n
	default: // room for a node column too
		l.cell = min(8, (width-44)/n)
	}
	l.left = width - n*l.cell
	l.status = 11
	switch {
	case l.left >= 42: // room for ContainerCreating and CrashLoopBackOff whole
		l.status = 18
	case width >= 110:
		l.status = 12
	}
	if l.left >= l.status+32 {
		l.node = min(12, l.left-l.status-20)
	}
	l.name = l.left - 2 - l.status - 1
	if l.node > 0 {
		l.name -= l.node + 1
	}
	return l
}

// nLifecycle is len(stages.Lifecycle), as a constant (a test checks it).
const nLifecycle = 15

// podsPane draws the swimlanes.
type podsPane struct {
	c     *Common
	cache map[*lanes.Lane]laneCache
	// res and hidden come from the Source's Status: timestamp resolution and
	// the stages it cannot see (indexed like stages.Lifecycle).
	res    time.Duration
	hidden [nLifecycle]bool
}

// setStatus takes the Source's resolution and unobservable stages.
func (p *podsPane) setStatus(st Status) {
	var hidden [nLifecycle]bool
	for _, id := range st.Unobservable {
		if i := id.Index(); i >= 0 && i < len(hidden) {
			hidden[i] = true
		}
	}
	if hidden != p.hidden || st.Resolution != p.res {
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
	width   int
	theme   string
	row     string
}

func newPodsPane(c *Common) *podsPane {
	return &podsPane{c: c, cache: map[*lanes.Lane]laneCache{}}
}

// header draws the column titles.
func (p *podsPane) header(lay laneLayout) string {
	var b strings.Builder
	b.WriteString("  ")
	b.WriteString(fit("NAME", lay.name))
	b.WriteByte(' ')
	if lay.node > 0 {
		b.WriteString(fit("NODE", lay.node))
		b.WriteByte(' ')
	}
	b.WriteString(fit("STATUS", lay.status))
	for _, id := range stages.Lifecycle {
		label := string(id)
		if len(label) > lay.cell-1 {
			label = medNames[id]
		}
		if len(label) > lay.cell-1 {
			label = shortNames[id]
		}
		b.WriteString(fit(label, lay.cell-1))
		b.WriteByte(' ')
	}
	return p.c.Paint.S(pBold, b.String())
}

// row draws one lane; sel is the selected stage index, or -1 when the lane is not selected.
func (p *podsPane) row(l *lanes.Lane, lay laneLayout, sel int, now time.Time) string {
	pt := &p.c.Paint
	static := sel < 0 && !l.TimeDependent()
	if static {
		if c, ok := p.cache[l]; ok && c.version == l.Version && c.width == lay.width && c.theme == p.c.Theme.Name {
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
	prefix := spaces(l.Depth)
	switch l.Kind {
	case stages.KindDeployment:
		prefix += p.c.Theme.Symbols.Expanded + " deploy/"
	case stages.KindReplicaSet:
		prefix += p.c.Theme.Symbols.Expanded + " rs/"
	}
	left := fit(prefix+midTrunc(l.Name, lay.name-ansi.StringWidth(prefix)), lay.name) + " "
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
	b.WriteString(pt.S(lanePaint(l), st))
	b.WriteByte(' ')
	p.cells(&b, l, lay, sel, now)
	row := b.String()
	if static {
		p.cache[l] = laneCache{version: l.Version, width: lay.width, theme: p.c.Theme.Name, row: row}
	}
	return row
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

func (p *podsPane) cells(b *strings.Builder, l *lanes.Lane, lay laneLayout, sel int, now time.Time) {
	pt := &p.c.Paint
	for i := range stages.Lifecycle {
		sym, rest, paint := p.cellParts(&l.Cells[i], lay.cell-1, now)
		if p.hidden[i] && l.Cells[i].State == lanes.NotReached {
			sym, rest, paint = p.c.Theme.Symbols.Unobservable, "", pMuted
		}
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
			if c.Attempt > 1 && c.Attempt < 10 {
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
	lay := newLaneLayout(width)
	out := make([]string, 0, h)
	out = append(out, p.header(lay))
	if len(rows) == 0 {
		out = append(out, "", p.c.Paint.S(pMuted, "  No pods yet. Press a to launch a demo workload or apply a manifest."))
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
