package tui

import (
	"strconv"
	"strings"
	"time"

	"github.com/podtrace/podtrace/stages"
)

// logEntry is one line of the events pane, as `kubectl get events -w` prints it.
type logEntry struct {
	time    time.Time
	warning bool
	reason  string
	object  string // pod/web-1, replicaset/web-5d8f
	message string
	count   int
}

// eventLog is a ring of the latest Kubernetes events: either the cluster's
// own (addKube), or those seen in stage events (the ones with a Reason),
// where repeats of the last line are counted.
type eventLog struct {
	ring  []logEntry
	start int
	n     int
	// kube is set once the cluster's own Events arrive: stage events no
	// longer add lines. byName maps an Event's namespace/name to its line's
	// sequence number, total counts the lines ever added.
	kube   bool
	byName map[string]int
	total  int
}

func newEventLog(capacity int) *eventLog {
	return &eventLog{ring: make([]logEntry, capacity), byName: map[string]int{}}
}

// addKube adds a Kubernetes Event, or updates its line when the Event was
// seen before and its line is still in the ring.
func (l *eventLog) addKube(e K8sEvent) {
	l.kube = true
	ent := logEntry{time: e.LastSeen, warning: e.Type == "Warning", reason: e.Reason, object: e.Object,
		message: e.Message, count: max(1, e.Count)}
	key := e.Namespace + "/" + e.Name
	if seq, ok := l.byName[key]; ok && e.Name != "" && seq >= l.total-l.n {
		*l.at(seq - (l.total - l.n)) = ent
		return
	}
	if len(l.byName) > 4*len(l.ring) {
		clear(l.byName) // names of lines long gone: start over
	}
	if e.Name != "" {
		l.byName[key] = l.total
	}
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

func (l *eventLog) add(e stages.Event) {
	if l.kube || e.Reason == "" || e.Status == stages.Started {
		return
	}
	kind := e.Kind
	if kind == "" {
		kind = stages.KindPod
	}
	obj := strings.ToLower(kind) + "/" + e.Pod
	warn := e.Status == stages.Failed || e.Status == stages.Retrying
	if l.n > 0 {
		last := l.at(l.n - 1)
		if last.object == obj && last.reason == e.Reason && last.message == e.Message {
			last.count++
			last.time = e.Time
			return
		}
	}
	l.push(logEntry{time: e.Time, warning: warn, reason: e.Reason, object: obj, message: e.Message, count: 1})
}

func (m *Model) scrollEvents(d int) {
	h := m.bodyHeight() - 1
	maxTop := max(0, m.log.len()-h)
	top := m.evTop
	if top < 0 {
		top = maxTop
	}
	top += d
	switch {
	case top >= maxTop:
		m.evTop = -1 // back to following the tail
	case top < 0:
		m.evTop = 0
	default:
		m.evTop = top
	}
}

// eventsView draws the events pane, h lines including its header.
func (m *Model) eventsView(w, h int, now time.Time) []string {
	pt := &m.c.Paint
	ageW, reasonW, objW := 9, 22, 32
	if w < 120 {
		ageW, reasonW, objW = 9, 17, 20
	}
	msgW := max(10, w-ageW-reasonW-objW-7-4)
	header := fit("LAST SEEN", ageW) + " " + fit("TYPE", 7) + " " + fit("REASON", reasonW) + " " + fit("OBJECT", objW) + " MESSAGE"
	out := []string{pt.S(pBold, clip(header, w))}
	rows := h - 1
	n := m.log.len()
	top := m.evTop
	if top < 0 || top > n-rows {
		top = max(0, n-rows)
	}
	if n == 0 {
		return append(out, pt.S(pMuted, "No events yet."))
	}
	for i := top; i < n && len(out) < h; i++ {
		e := m.log.at(i)
		age := fmtAge(now.Sub(e.time))
		if e.count > 1 {
			age += " (x" + strconv.Itoa(e.count) + ")"
		}
		typ, paint := "Normal", pText
		if e.warning {
			typ, paint = "Warning", pWarning
		}
		line := fit(age, ageW) + " " + pt.S(paint, fit(typ, 7)) + " " + fit(e.reason, reasonW) + " " + fit(e.object, objW) + " " + clip(e.message, msgW)
		out = append(out, line)
	}
	return out
}
