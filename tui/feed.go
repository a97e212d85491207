package tui

import (
	"time"

	"github.com/podtrace/podtrace/stages"
)

// Fold applies events directly; the frame loop uses it, and so can tests and
// benchmarks that build a model without a running program. The selection
// stays on the same lane when rows come or go.
func (m *Model) Fold(evs ...stages.Event) { keepingSelection(m, evs, m.fold) }

func (m *Model) fold(e stages.Event) {
	m.store.Fold(e)
	m.anchor(e.Time)
}

// Apply takes objects' rows directly, as Fold takes events.
func (m *Model) Apply(rows ...stages.Row) { keepingSelection(m, rows, m.apply) }

// keepingSelection hands f each of vs, keeping the selection on its lane.
func keepingSelection[T any](m *Model, vs []T, f func(T)) {
	prev := m.selected()
	for _, v := range vs {
		f(v)
	}
	m.keepSelection(prev)
}

func (m *Model) apply(r stages.Row) {
	m.store.Apply(r)
	m.anchor(r.Time)
}

// anchor notes the latest time the Source reported, for engineNow.
func (m *Model) anchor(t time.Time) {
	if t.After(m.anchorEng) {
		m.anchorEng, m.anchorWal = t, m.c.Now()
	}
}

// drain hands f every value waiting on ch, up to maxBatch, without
// blocking; it reports whether ch is closed.
func drain[T any](ch <-chan T, f func(T)) (closed bool) {
	for range maxBatch {
		select {
		case v, ok := <-ch:
			if !ok {
				return true
			}
			f(v)
		default:
			return false
		}
	}
	return false
}

// onFrame drains every event waiting on the Source without blocking.
func (m *Model) onFrame() {
	now := m.c.Now()
	prev := m.selected()
	defer m.keepSelection(prev)
	if ch := m.src.Events(); ch != nil && !m.ended {
		m.ended = drain(ch, m.fold)
	}
	if rs, ok := m.src.(RowSource); ok && !m.rowsEnded {
		if ch := rs.Rows(); ch != nil {
			m.rowsEnded = drain(ch, m.apply)
		}
	}
	if ks, ok := m.src.(KubeEventSource); ok && !m.kubeEnded {
		if ch := ks.KubeEvents(); ch != nil {
			m.kubeEnded = drain(ch, m.log.addKube)
		}
	}
	if now.Sub(m.statusAt) >= time.Second {
		m.refreshStatus(now)
	}
	m.clampScroll()
}

// engineNow is the Source's clock. A Source on real time (a live
// cluster, or one without clock controls: a real cluster attached to)
// stamps its events with the wall clock, so its now is the wall clock's,
// whatever events it reported last (an attached cluster's history would
// otherwise put now at its latest event, and newer Events in the future).
// A replay's clock is estimated from the latest event time, the wall time
// since, its pause and its speed.
func (m *Model) engineNow() time.Time {
	if m.anchorEng.IsZero() || m.realTime || m.src.Clock() == nil {
		return m.c.Now()
	}
	if m.paused {
		return m.anchorEng
	}
	sp := m.speed
	if sp <= 0 {
		sp = 1
	}
	return m.anchorEng.Add(time.Duration(float64(m.c.Now().Sub(m.anchorWal)) * sp))
}
