package tui

import (
	"strings"
	"time"

	"github.com/podtrace/podtrace/stages"
	"github.com/podtrace/podtrace/tui/lanes"
)

// timelineView draws the selected lane as one bar per stage on a time axis.
func (m *Model) timelineView(w, h int, now time.Time) []string {
	pt := &m.c.Paint
	l := m.selected()
	if l == nil {
		return []string{pt.S(pMuted, "Nothing selected. Apply a workload with a.")}
	}
	ids := append(append([]stages.ID{}, stages.Lifecycle...), stages.Teardown...)
	start, end := l.First, l.LastTime
	for _, id := range ids {
		c := l.Cell(id)
		if !c.Start.IsZero() && c.Start.Before(start) {
			start = c.Start
		}
		if c.State == lanes.InProgress || c.State == lanes.Waiting {
			end = now
		}
		if c.State == lanes.Retrying && c.NextTry.After(end) {
			end = c.NextTry
		}
	}
	span := end.Sub(start)
	if span <= 0 {
		span = time.Millisecond
	}
	labelW, durW := 10, 8
	barW := max(10, w-labelW-durW-4)
	pos := func(t time.Time) int {
		x := int(float64(t.Sub(start)) / float64(span) * float64(barW-1))
		return min(barW-1, max(0, x))
	}
	out := []string{pt.S(pBold, clip(strings.ToLower(l.Kind)+"/"+l.Name+pt.S(pMuted, "  "+l.Status+"  "+start.Format("15:04:05.000")+" + "+fmtDur(span)), w))}
	sel := m.selectedStage()
	for _, id := range ids {
		if len(out) >= h-1 {
			break
		}
		c := l.Cell(id)
		label := fit(string(id), labelW)
		if id == sel {
			label = pt.S(pSelCell, label)
		}
		bar, dur := m.bar(c, pos, barW, now)
		out = append(out, label+" "+bar+" "+fit(dur, durW))
	}
	axis := spaces(labelW+1) + "0" + spaces(max(0, barW-1-len(fmtDur(span))-1)) + " " + fmtDur(span)
	out = append(out, pt.S(pMuted, clip(axis, w)))
	return out
}

// bar draws one stage's bar: ▇ done, ▒ running or held, ✗ at a failure, ░ waiting for a retry.
func (m *Model) bar(c *lanes.Cell, pos func(time.Time) int, w int, now time.Time) (string, string) {
	pt := &m.c.Paint
	sy := m.c.Theme.Symbols
	if c.State == lanes.NotReached || c.Start.IsZero() && c.End.IsZero() {
		return pt.S(pPending, strings.Repeat("·", w)), ""
	}
	from := pos(c.Start)
	to := from
	var fill string
	var paint int
	var dur string
	switch c.State {
	case lanes.Done:
		to, fill, paint, dur = pos(c.End), "█", pDone, fmtDur(c.Duration)
	case lanes.InProgress:
		to, fill, paint, dur = pos(now), "▒", pRunning, fmtDur(now.Sub(c.Start))
	case lanes.Waiting:
		to, fill, paint, dur = pos(now), "▒", pWaiting, sy.Waiting+fmtDur(now.Sub(c.Start))
	case lanes.Failed:
		to, fill, paint, dur = pos(c.End), "█", pFailed, sy.Failed+fmtDur(c.Duration)
	case lanes.Retrying:
		to, fill, paint, dur = pos(c.End), "█", pRetrying, sy.Retrying+itoa(c.Attempt)
	}
	if to < from {
		to = from
	}
	var b strings.Builder
	b.WriteString(spaces(from))
	b.WriteString(pt.S(paint, strings.Repeat(fill, to-from+1)))
	rest := w - (to + 1)
	if c.State == lanes.Retrying && !c.NextTry.IsZero() {
		wait := min(rest, pos(c.NextTry)-to)
		if wait > 0 {
			b.WriteString(pt.S(pMuted, strings.Repeat("░", wait)))
			rest -= wait
		}
	}
	b.WriteString(spaces(rest))
	return b.String(), dur
}
