package tui

import (
	"sort"
	"strconv"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// logEntry is one line of the events pane, as `kubectl get events -w` prints it.
type logEntry struct {
	time, first time.Time // last and first seen
	warning     bool
	reason      string
	object      string // pod/web-1, replicaset/web-5d8f
	message     string
	count       int
	source      string
	seq         int // when it was added, to order equal times
}

// eventLog is a ring of the latest Kubernetes Events, those the Source
// read from the Events API (a repeat updates its line). Stage events never
// add lines: their reasons are podtrace's, not a Kubernetes component's.
type eventLog struct {
	ring  []logEntry
	start int
	n     int
	// byName maps an Event's namespace/name to its line's sequence number,
	// total counts the lines ever added.
	byName map[string]int
	total  int
	// order is the ring's lines by last seen (indices into ring), rebuilt
	// when dirty.
	order []int
	dirty bool
}

func newEventLog(capacity int) *eventLog {
	return &eventLog{ring: make([]logEntry, capacity), byName: map[string]int{}}
}

// addKube adds a Kubernetes Event, or updates its line when the Event was
// seen before and its line is still in the ring.
func (l *eventLog) addKube(e K8sEvent) {
	l.dirty = true
	ent := logEntry{time: e.LastSeen, first: e.FirstSeen, warning: e.Type == "Warning", reason: e.Reason, object: e.Object,
		message: e.Message, count: max(1, e.Count), source: e.Source}
	if ent.first.IsZero() {
		ent.first = ent.time
	}
	key := e.Namespace + "/" + e.Name
	if seq, ok := l.byName[key]; ok && e.Name != "" && seq >= l.total-l.n {
		old := l.at(seq - (l.total - l.n))
		if e.FirstSeen.IsZero() && !old.first.IsZero() {
			ent.first = old.first
		}
		ent.seq = old.seq
		*old = ent
		return
	}
	if len(l.byName) > 4*len(l.ring) {
		clear(l.byName) // names of lines long gone: start over
	}
	if e.Name != "" {
		l.byName[key] = l.total
	}
	ent.seq = l.total
	l.push(ent)
}

func (l *eventLog) push(ent logEntry) {
	l.total++
	if l.n < len(l.ring) {
		l.ring[(l.start+l.n)%len(l.ring)] = ent
		l.n++
		return
	}
	l.ring[l.start] = ent
	l.start = (l.start + 1) % len(l.ring)
}

func (l *eventLog) len() int { return l.n }

func (l *eventLog) at(i int) *logEntry { return &l.ring[(l.start+i)%len(l.ring)] }

// sorted returns the lines in time order (LAST SEEN, oldest first).
func (l *eventLog) sorted() []*logEntry {
	if l.dirty || len(l.order) != l.n {
		l.dirty = false
		l.order = l.order[:0]
		for i := 0; i < l.n; i++ {
			l.order = append(l.order, (l.start+i)%len(l.ring))
		}
		sort.SliceStable(l.order, func(i, j int) bool {
			a, b := &l.ring[l.order[i]], &l.ring[l.order[j]]
			if !a.time.Equal(b.time) {
				return a.time.Before(b.time)
			}
			return a.seq < b.seq
		})
	}
	out := make([]*logEntry, len(l.order))
	for i, k := range l.order {
		out[i] = &l.ring[k]
	}
	return out
}

// warningsFirst picks at most n lines for the events strip: the latest
// Warnings, then the latest of the others, each group in time order.
func warningsFirst(all []*logEntry, n int) []*logEntry {
	var warn, normal []*logEntry
	for i := len(all) - 1; i >= 0 && len(warn) < n; i-- {
		if all[i].warning {
			warn = append(warn, all[i])
		}
	}
	for i := len(all) - 1; i >= 0 && len(warn)+len(normal) < n; i-- {
		if !all[i].warning {
			normal = append(normal, all[i])
		}
	}
	out := make([]*logEntry, 0, len(warn)+len(normal))
	for i := len(warn) - 1; i >= 0; i-- {
		out = append(out, warn[i])
	}
	for i := len(normal) - 1; i >= 0; i-- {
		out = append(out, normal[i])
	}
	return out
}

// moveEvent moves the events pane's cursor by d lines; past the last line
// it follows the newest again.
func (m *Model) moveEvent(d int) {
	n := m.log.len()
	sel := m.evSel
	if sel < 0 {
		sel = n - 1
	}
	sel += d
	switch {
	case sel >= n-1:
		m.evSel = -1
	case sel < 0:
		m.evSel = 0
	default:
		m.evSel = sel
	}
}

// selectedEvent returns the line under the events pane's cursor, or nil.
func (m *Model) selectedEvent() *logEntry {
	all := m.log.sorted()
	if len(all) == 0 {
		return nil
	}
	if m.evSel < 0 || m.evSel >= len(all) {
		return all[len(all)-1]
	}
	return all[m.evSel]
}

// eventsView draws the Events tab, h lines including its header: every
// line in time order, the cursor's line highlighted.
func (m *Model) eventsView(w, h int, now time.Time) []string {
	all := m.log.sorted()
	rows := h - 1
	sel := m.evSel
	if sel < 0 || sel >= len(all) {
		sel = len(all) - 1
	}
	top := max(0, min(sel-rows/2, len(all)-rows))
	end := min(len(all), top+rows)
	return m.eventLines(all[top:end], sel-top, w, now)
}

// eventsStripView draws the events strip under the lanes: Warnings first.
func (m *Model) eventsStripView(w, h int, now time.Time) []string {
	return m.eventLines(warningsFirst(m.log.sorted(), h-1), -1, w, now)
}

// eventLines draws a header and the lines, the one at index cur
// highlighted (-1: none). Columns are as wide as the lines need; MESSAGE
// gets the rest.
func (m *Model) eventLines(lines []*logEntry, cur, w int, now time.Time) []string {
	pt := &m.c.Paint
	if len(lines) == 0 {
		msg := "No events yet."
		if ks, ok := m.src.(KubeEventSource); !ok || ks.KubeEvents() == nil {
			msg = "No Kubernetes Events: " + m.src.Name() + " delivers none (the lanes and the detail have each stage's reason)."
		}
		return []string{pt.S(pBold, clip(eventHeader(9, 6, 6), w)), pt.S(pMuted, clip(msg, w))}
	}
	ages := make([]string, len(lines))
	ageW, reasonW, objW := len("LAST SEEN"), len("REASON"), len("OBJECT")
	for i, e := range lines {
		ages[i] = ago(now, e.time)
		if e.count > 1 {
			ages[i] += " (x" + strconv.Itoa(e.count) + ")"
		}
		ageW, reasonW, objW = max(ageW, len(ages[i])), max(reasonW, len(e.reason)), max(objW, len(e.object))
	}
	reasonW, objW = min(reasonW, 26), min(objW, max(20, w/4))
	msgW := max(10, w-ageW-7-reasonW-objW-4)
	out := []string{pt.S(pBold, clip(eventHeader(ageW, reasonW, objW), w))}
	for i, e := range lines {
		typ, paint := "Normal", pText
		if e.warning {
			typ, paint = "Warning", pWarning
		}
		line := fit(ages[i], ageW) + " " + pt.S(paint, fit(typ, 7)) + " " + fit(e.reason, reasonW) + " " +
			fit(e.object, objW) + " " + clip(e.message, msgW)
		if i == cur {
			line = pt.S(pSelected, fit(ansi.Strip(line), w))
		}
		out = append(out, line)
	}
	return out
}

func eventHeader(ageW, reasonW, objW int) string {
	return fit("LAST SEEN", ageW) + " " + fit("TYPE", 7) + " " + fit("REASON", reasonW) + " " + fit("OBJECT", objW) + " MESSAGE"
}

// eventOverlay shows one Event in full.
type eventOverlay struct{ e logEntry }

func (*eventOverlay) title() string { return "Event" }

func (*eventOverlay) update(m *Model, msg tea.KeyPressMsg) (overlay, tea.Cmd) {
	return nil, nil // any key closes it
}

func (o *eventOverlay) view(m *Model, w, h int) []string {
	pt := &m.c.Paint
	e := o.e
	typ, paint := "Normal", pText
	if e.warning {
		typ, paint = "Warning", pWarning
	}
	layout := "2006-01-02 15:04:05"
	now := m.engineNow()
	out := []string{
		"Object      " + e.object,
		"Type        " + pt.S(paint, typ),
		"Reason      " + pt.S(pBold, e.reason),
	}
	if e.source != "" {
		out = append(out, "Source      "+e.source)
	}
	out = append(out,
		"Count       "+strconv.Itoa(e.count),
		"First seen  "+e.first.Format(layout)+" ("+ago(now, e.first)+" ago)",
		"Last seen   "+e.time.Format(layout)+" ("+ago(now, e.time)+" ago)",
		"Message")
	for _, l := range strings.Split(ansi.Hardwrap(ansi.Wordwrap(e.message, w-2, ""), w-2, true), "\n") {
		out = append(out, "  "+l)
	}
	return append(out, "", pt.S(pMuted, "Press any key to close."))
}

// wide makes the event box use the whole width.
func (*eventOverlay) wide() bool { return true }
