package tui

import "github.com/podtrace/podtrace/tui/lanes"

// focusStage selects the selected lane's failing or in-progress stage, when
// it has one: what the detail should explain first.
func (m *Model) focusStage() {
	if l := m.selected(); l != nil {
		if f := l.Focus(); f >= 0 {
			m.stage = f
		}
	}
}

// nextProblem moves the selection to the next lane (wrapping around) that
// is failing, retrying or held, and to its problem stage.
func (m *Model) nextProblem() {
	rows := m.store.Rows()
	for i := 1; i <= len(rows); i++ {
		j := (m.sel + i) % len(rows)
		if l := rows[j]; l.Failing() {
			m.sel, m.detailTop = j, 0
			if f := l.Focus(); f >= 0 {
				m.stage = f
			}
			m.clampScroll()
			return
		}
	}
	m.setNote("no pod is failing, retrying or held", false)
}

func (m *Model) pageOrScroll(d int) {
	switch m.screen {
	case screenEvents:
		m.moveEvent(d * m.bodyHeight())
	case screenDetail:
		m.detailTop = max(0, m.detailTop+d*(m.bodyHeight()/2))
	default:
		m.move(d * m.lanesHeight())
	}
}

// keepSelection moves the selection to prev's row when rows were added or
// removed before it; when prev has no row any more, the index stays.
func (m *Model) keepSelection(prev *lanes.Lane) {
	if prev == nil || m.selected() == prev {
		return
	}
	for i, l := range m.store.Rows() {
		if l == prev {
			m.sel = i
			break
		}
	}
	m.clampScroll()
}
