package tui

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// eventsStrip is how many lines the events strip under the lanes takes on tall terminals.
const eventsStrip = 8

// Below minWidth×minHeight the UI only asks for a bigger terminal; between
// that and 80×24 it draws what fits.
const (
	minWidth  = 40
	minHeight = 8
)

// noteTTL is how long a command's result stays in the footer.
const noteTTL = 6 * time.Second

func itoa(n int) string { return strconv.Itoa(n) }

// wideDetail reports whether the pods screen has room for the detail at its
// right: from 160 columns, and only while the lanes beside it still show
// every name and cause whole (else enter shows the detail over them).
func (m *Model) wideDetail() bool {
	return m.screen == screenPods && m.c.Width >= 160 && m.pods.whole(m.store.Rows(), m.c.Width-detailWidth(m.c.Width)-1)
}

// detailWidth is the width of the detail beside the lanes at width.
func detailWidth(width int) int { return min(72, width/3) }

// splitEvents reports whether the pods screen has room for an events strip below.
func (m *Model) splitEvents() bool { return m.c.Height >= 36 }

// View draws the whole screen.
func (m *Model) View() tea.View {
	v := tea.NewView(m.Render())
	v.AltScreen = true
	v.MouseMode = tea.MouseModeCellMotion
	v.WindowTitle = "podtrace · " + m.src.Name()
	return v
}

// Render returns the screen's text: the header, the active screen (with any
// overlay over it) and the footer, exactly Height lines of at most Width cells.
func (m *Model) Render() string {
	w, h := m.c.Width, m.c.Height
	if w < minWidth || h < minHeight {
		msg := clip(fmt.Sprintf("podtrace needs at least 80×24 (now %d×%d)", w, h), w)
		return msg + strings.Repeat("\n", max(0, h-1))
	}
	now := m.engineNow()
	lines := make([]string, 0, h)
	lines = append(lines, m.headerLine(w), m.tabsLine(w))
	bh := m.bodyHeight()
	var body []string
	switch m.screen {
	case screenPods:
		body = m.podsScreen(w, bh, now)
	case screenEvents:
		body = m.eventsView(w, bh, now)
	case screenTimeline:
		body = m.timelineView(w, bh, now)
	case screenDetail:
		body = m.detailView(w, bh, now)
	}
	if m.overlay != nil {
		body = drawOverlay(m, m.overlay, body, w, bh)
	}
	for i := 0; i < bh; i++ {
		if i < len(body) {
			lines = append(lines, body[i])
		} else {
			lines = append(lines, "")
		}
	}
	lines = append(lines, m.footerLines(w)...)
	// A line wider than the terminal would wrap and scroll the screen: cut
	// whatever does not fit (below 80 columns the layout's minimum does not).
	for i, l := range lines {
		lines[i] = clip(l, w)
	}
	return strings.Join(lines, "\n")
}

func (m *Model) podsScreen(w, h int, now time.Time) []string {
	rows := m.store.Rows()
	lw := w
	dw := 0
	if m.wideDetail() {
		dw = detailWidth(w)
		lw = w - dw - 1
	}
	laneH, evH := m.split()
	m.pods.filter = m.store.Filter()
	lanesOut := m.pods.view(rows, lw, laneH, m.top, m.sel, m.stage, now)
	if dw > 0 {
		det := m.detailView(dw, laneH, now)
		sep := m.c.Paint.S(pBorder, "│")
		for i := 0; i < laneH; i++ {
			left := ""
			if i < len(lanesOut) {
				left = lanesOut[i]
			}
			right := ""
			if i < len(det) {
				right = det[i]
			}
			if i < len(lanesOut) {
				lanesOut[i] = fit(left, lw) + sep + right
			} else {
				lanesOut = append(lanesOut, spaces(lw)+sep+right)
			}
		}
	}
	if evH == 0 {
		return lanesOut
	}
	for len(lanesOut) < laneH {
		lanesOut = append(lanesOut, "")
	}
	if evH == 1 {
		return append(lanesOut, m.warningLine(w, now))
	}
	lanesOut = append(lanesOut, m.c.Paint.S(pBorder, strings.Repeat("─", w)))
	return append(lanesOut, m.eventsStripView(w, evH, now)...)
}

// latestWarning returns the newest Warning Event, or nil.
func (m *Model) latestWarning() *logEntry {
	all := m.log.sorted()
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].warning {
			return all[i]
		}
	}
	return nil
}

// warningLine is the latest Warning in one line, for terminals too short
// for the events strip; e shows them all.
func (m *Model) warningLine(w int, now time.Time) string {
	pt := &m.c.Paint
	e := m.latestWarning()
	if e == nil {
		return ""
	}
	age := ago(now, e.time)
	if e.count > 1 {
		age += " (x" + itoa(e.count) + ")"
	}
	return clip(pt.S(pWarning, "Warning")+" "+age+" "+pt.S(pBold, e.reason)+" "+e.object+": "+e.message, w)
}

func (m *Model) headerLine(w int) string {
	pt := &m.c.Paint
	st := m.status
	// Each fact has a long and a short form; the short ones are used when the line is too long.
	type fact struct{ long, short string }
	facts := []fact{{"podtrace", ""}, {m.src.Name(), m.src.Name()}}
	if st.NodesTotal > 0 {
		n := itoa(st.NodesReady) + "/" + itoa(st.NodesTotal)
		facts = append(facts, fact{"nodes " + n + " Ready", "nodes " + n})
	}
	if st.Etcd != "" {
		short := "etcd " + st.Etcd
		if st.Etcd == "healthy" {
			short = "etcd " + m.c.Theme.Symbols.Done
		}
		facts = append(facts, fact{"etcd " + st.Etcd, short})
	}
	if st.Runtime != "" {
		facts = append(facts, fact{st.Runtime, ""})
	}
	if m.src.Clock() != nil {
		state, short := "▶", "▶"
		if m.paused {
			state, short = "⏸ paused", "⏸"
		}
		facts = append(facts, fact{"speed " + fmtSpeed(m.speed) + " " + state, fmtSpeed(m.speed) + " " + short})
	}
	if m.faultsN > 0 {
		facts = append(facts, fact{"faults " + itoa(m.faultsN), "faults " + itoa(m.faultsN)})
	}
	if m.heldN > 0 {
		facts = append(facts, fact{"held " + itoa(m.heldN), "held " + itoa(m.heldN)})
	}
	ps := m.phaseSummary()
	facts = append(facts, fact{"pods " + ps, ps})
	if st.ReadOnly != "" {
		facts = append(facts, fact{"read-only", "read-only"})
	}
	join := func(short bool) string {
		var parts []string
		for _, f := range facts {
			s := f.long
			if short {
				s = f.short
			}
			if s != "" {
				parts = append(parts, s)
			}
		}
		return " " + strings.Join(parts, " │ ")
	}
	line := join(false)
	if ansi.StringWidth(line) > w {
		line = join(true)
	}
	return pt.S(pHeader, fit(line, w))
}

// phaseSummary is "3 Running, 1 Pending" in a fixed order.
func (m *Model) phaseSummary() string {
	counts := m.store.PhaseCounts()
	order := []string{"Running", "Pending", "Failed", "Terminating", "Deleted"}
	var parts []string
	seen := map[string]bool{}
	for _, p := range order {
		seen[p] = true
		if n := counts[p]; n > 0 {
			parts = append(parts, itoa(n)+" "+p)
		}
	}
	var rest []string
	for p, n := range counts {
		if !seen[p] && n > 0 {
			rest = append(rest, itoa(n)+" "+p)
		}
	}
	sort.Strings(rest)
	parts = append(parts, rest...)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func (m *Model) tabsLine(w int) string {
	pt := &m.c.Paint
	var b strings.Builder
	b.WriteByte(' ')
	for i, name := range screenNames {
		if screen(i) == screenDetail && m.screen != screenDetail {
			continue
		}
		if screen(i) == m.screen {
			b.WriteString(pt.S(pTabActive, name))
		} else {
			b.WriteString(pt.S(pTab, name))
		}
		b.WriteString("  ")
	}
	right := ""
	if f := m.store.Filter(); f != "" && !m.filtering {
		right += "filter: " + f + "  "
	}
	if l := m.selected(); l != nil {
		right += "stage " + string(m.selectedStage())
		if l.Node != "" {
			right += "  on " + l.Node
		}
		right += "  " + itoa(m.sel+1) + "/" + itoa(len(m.store.Rows()))
	}
	if m.ended {
		right += "  (source ended)"
	}
	if m.goalMet != "" {
		left := b.String()
		banner := pt.S(pDone, m.c.Theme.Symbols.Done+" goal met") + pt.S(pMuted, " (S: what was wrong)") + "  "
		b.Reset()
		b.WriteString(left + banner)
	}
	left := b.String()
	return left + clip(pt.S(pMuted, right), max(0, w-ansi.StringWidth(left)))
}

// footerLines is the status line: the filter being typed, a command's
// result (wrapped over at most three lines rather than cut), or the key
// hints that fit whole, "? help" always among them.
func (m *Model) footerLines(w int) []string {
	pt := &m.c.Paint
	if m.filtering {
		return []string{clip(m.filter.View(), w)}
	}
	if m.note != "" && m.c.Now().Sub(m.noteAt) < noteTTL && w > 2 {
		paint := pAccent
		if m.noteErr {
			paint = pError
		}
		lines := strings.Split(ansi.Hardwrap(ansi.Wordwrap(m.note, w-1, ""), w-1, true), "\n")
		if len(lines) > 3 {
			lines = lines[:3]
			lines[2] = clip(lines[2]+"…", w-1)
		}
		for i, l := range lines {
			lines[i] = pt.S(paint, " "+l)
		}
		return lines
	}
	k := &m.c.Keys
	off := m.unavailableKeys()
	hint := func(b key.Binding) string {
		return pt.S(pAccent, b.Help().Key) + " " + pt.S(pMuted, b.Help().Desc)
	}
	sep := pt.S(pBorder, " • ")
	tail := hint(k.Help) + sep + hint(k.Quit)
	budget := w - 1 - ansi.StringWidth(tail)
	var parts []string
	for _, kb := range k.ShortHelp() {
		if off[kb.Help().Key] || kb.Help().Key == k.Help.Help().Key || kb.Help().Key == k.Quit.Help().Key {
			continue
		}
		if n := ansi.StringWidth(hint(kb)) + 3; n <= budget {
			parts = append(parts, hint(kb))
			budget -= n
		}
	}
	parts = append(parts, tail)
	return []string{clip(" "+strings.Join(parts, sep), w)}
}
