package tui

import (
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// Lesson is a workshop scenario as the UI shows it.
type Lesson struct {
	Title, Story string
	// Goal says what the learner must reach, in words.
	Goal string
	// Hints are graded, from a nudge to nearly the answer.
	Hints []string
	// Explanation says what was wrong; it is shown once the goal is met.
	Explanation string
	// Progress says, under the story, what the cluster is doing while it
	// starts and is broken, then how to reach it ("" for nothing).
	Progress string
}

// LessonSource is a Source running a workshop scenario: the UI shows its
// story and graded hints on a key each, and a banner with the explanation
// once the goal is met.
type LessonSource interface {
	// Lesson returns the scenario, or nil when there is none.
	Lesson() *Lesson
	// GoalMet says how the goal holds ("" while it does not). It must be
	// cheap: the UI calls it about once a second.
	GoalMet() string
}

// lesson returns the Source's scenario, or nil.
func (m *Model) lesson() *Lesson {
	if ls, ok := m.src.(LessonSource); ok {
		return ls.Lesson()
	}
	return nil
}

// checkGoal notes the goal met (from the Source, once a second) and opens
// the banner as soon as no other box is open.
func (m *Model) checkGoal() {
	ls, ok := m.src.(LessonSource)
	if !ok || m.goalMet != "" || ls.Lesson() == nil {
		return
	}
	if m.goalMet = ls.GoalMet(); m.goalMet != "" {
		m.goalBanner = true
	}
}

// openGoalBanner shows the goal banner when it waits and nothing else is open.
func (m *Model) openGoalBanner() {
	if m.goalBanner && m.overlay == nil {
		m.goalBanner = false
		m.overlay = &lessonOverlay{mode: lessonGoal}
	}
}

// openLesson opens the scenario's story, or its hints (the first at least).
func (m *Model) openLesson(hints bool) {
	if m.lesson() == nil {
		m.setNote("no scenario: start one with podtrace scenario NAME", true)
		return
	}
	ov := &lessonOverlay{mode: lessonStory}
	if hints {
		ov.mode, m.hints = lessonHints, max(m.hints, 1)
	}
	m.overlay = ov
}

// The lesson box's modes.
const (
	lessonStory = iota
	lessonHints
	lessonGoal
)

// lessonOverlay shows the scenario's story, its hints so far, or the goal met.
type lessonOverlay struct{ mode int }

func (o *lessonOverlay) title() string {
	switch o.mode {
	case lessonHints:
		return "Hints"
	case lessonGoal:
		return "Goal met"
	}
	return "Scenario"
}

// wide makes the lesson box use the whole width.
func (*lessonOverlay) wide() bool { return true }

func (o *lessonOverlay) update(m *Model, msg tea.KeyPressMsg) (overlay, tea.Cmd) {
	if o.mode == lessonHints && msg.String() == m.c.Keys.Hint.Help().Key {
		if l := m.lesson(); l != nil && m.hints < len(l.Hints) {
			m.hints++
			return o, nil
		}
	}
	return nil, nil // any other key closes it
}

func (o *lessonOverlay) view(m *Model, w, h int) []string {
	pt := &m.c.Paint
	l := m.lesson()
	if l == nil {
		return nil
	}
	var out []string
	// para wraps s after prefix; the wrapped lines start under s's first
	// character, so that a hint's number stands alone on its first line.
	para := func(prefix, s string) {
		pw := ansi.StringWidth(prefix)
		for i, line := range strings.Split(ansi.Hardwrap(ansi.Wordwrap(strings.TrimSpace(s), w-pw, ""), w-pw, true), "\n") {
			if i > 0 {
				prefix = strings.Repeat(" ", pw)
			}
			out = append(out, prefix+line)
		}
	}
	met := func() {
		out = append(out, pt.S(pDone, m.c.Theme.Symbols.Done+" Goal met: "+l.Goal))
		if m.goalMet != "" {
			para("  ", m.goalMet)
		}
		out = append(out, "", pt.S(pBold, "What was wrong"))
		para("", l.Explanation)
	}
	switch o.mode {
	case lessonGoal:
		met()
	case lessonHints:
		for i, hint := range l.Hints[:min(m.hints, len(l.Hints))] {
			para(strconv.Itoa(i+1)+". ", hint)
		}
		out = append(out, "")
		if m.hints < len(l.Hints) {
			out = append(out, pt.S(pMuted, "H for the next hint ("+strconv.Itoa(len(l.Hints)-m.hints)+" more), any other key closes."))
		} else {
			out = append(out, pt.S(pMuted, "That was the last hint. Any key closes."))
		}
	default:
		out = append(out, pt.S(pBold, l.Title), "")
		para("", l.Story)
		out = append(out, "", pt.S(pBold, "Goal: ")+l.Goal)
		if l.Progress != "" {
			out = append(out, "")
			para("", l.Progress)
		}
		if m.goalMet != "" {
			out = append(out, "")
			met()
		} else {
			out = append(out, "", pt.S(pMuted, "H shows a hint ("+strconv.Itoa(len(l.Hints))+", graded). Any key closes."))
		}
	}
	return out
}
