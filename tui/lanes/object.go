package lanes

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/podtrace/podtrace/stages"
)

// Apply takes an object's row, as kubectl prints it: from then on the
// lane's STATUS, READY and RESTARTS are the object's, and the stages the
// object shows finished are closed, so no cell and no cause contradicts
// it. An object seen before any of its stage events (attach to a running
// cluster) gets a lane of its own.
func (s *Store) Apply(r stages.Row) {
	key := LaneKey(r.Kind, r.Namespace, r.Name)
	l := s.lanes[key]
	if l == nil {
		if r.Deleted {
			return
		}
		first := r.Created
		if first.IsZero() {
			first = r.Time
		}
		l = &Lane{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, First: first}
		s.lanes[key] = l
		s.dirty = true
	}
	obj := r
	l.Object = &obj
	if r.Node != "" {
		l.Node = r.Node
	}
	if r.Deleted {
		l.Deleted = true
	}
	for _, id := range r.Done {
		closeCell(l.Cell(id), r.Time)
	}
	if l.Kind == stages.KindPod && (slices.Contains(r.Done, stages.Ready) || r.Phase == "Succeeded") {
		// A Ready or completed pod has no current problem on its way up.
		for i := range stages.Lifecycle {
			closeCell(&l.Cells[i], r.Time)
		}
	}
	if r.Time.After(l.LastTime) {
		l.LastTime = r.Time
	}
	l.Status, l.Phase = status(l)
	if l.Kind == stages.KindPod {
		s.count(l)
	}
	s.owners = true
	l.Version++
	s.Version++
}

// closeCell marks a stage the object shows finished as done, unless it
// already is or was never seen, or a breakpoint holds it.
func closeCell(c *Cell, at time.Time) {
	if c == nil {
		return
	}
	switch c.State {
	case NotReached, Done:
		return
	case Waiting:
		if c.Reason == "Breakpoint" {
			return
		}
	}
	c.State, c.End, c.NextTry = Done, at, time.Time{}
	if !c.Start.IsZero() && at.After(c.Start) {
		c.Duration = at.Sub(c.Start)
	}
}

// objectStatus is a lane's STATUS and phase from its object: a pod's or
// Job's STATUS as kubectl prints it, a workload's READY ("2/4 ready").
func objectStatus(l *Lane) (string, string) {
	o := l.Object
	switch {
	case l.Kind == stages.KindPod, o.Status != "":
		return o.Status, o.Phase
	}
	return o.Ready + " ready", o.Phase
}

// objectRestarts is the count kubectl's RESTARTS column starts with ("2
// (5s ago)" is 2).
func objectRestarts(o *stages.Row) int {
	n, _ := strconv.Atoi(strings.Fields(o.Restarts + " 0")[0])
	return n
}
