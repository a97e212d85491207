package tui

import (
	"context"
	"errors"
	"fmt"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/podtrace/podtrace/stages"
	"github.com/podtrace/podtrace/themes"
	"github.com/podtrace/podtrace/tui/lanes"
)

// screen is what fills the main area.
type screen int

const (
	screenPods screen = iota
	screenEvents
	screenTimeline
	screenDetail
)

var screenNames = [...]string{"Pods", "Events", "Timeline", "Detail"}

// frameInterval is how often the UI drains the Source and redraws: one frame.
const frameInterval = time.Second / 30

// maxBatch bounds how many events one frame folds, so a flood cannot stall input.
const maxBatch = 50000

// Options configure a Model.
type Options struct {
	// Theme names the starting theme (themes.DefaultName when empty).
	Theme string
	// NoColor drops colours (set it from themes.NoColorEnv()).
	NoColor bool
	// Now is the wall clock; nil means time.Now.
	Now func() time.Time
}

// Model is the root bubbletea model. Its Update only dispatches: folding
// events, keys to the active screen or overlay, results of commands.
type Model struct {
	src    Source
	c      *Common
	store  *lanes.Store
	log    *eventLog
	pods   *podsPane
	screen screen
	back   screen // where esc returns from the detail screen

	sel, stage, top int // selected row, selected stage (index in Lifecycle), first visible row
	evSel           int // events pane cursor (index in time order); -1 follows the newest
	detailTop       int

	filtering bool
	filter    lineInput

	overlay overlay

	status    Status
	statusAt  time.Time
	anchorEng time.Time // engine time at anchorWall
	anchorWal time.Time
	paused    bool
	speed     float64
	realTime  bool // the Source's events are on real time (ClockControl.RealTime)
	faultsN   int  // active faults, from the Source once a second
	heldN     int  // pods held at a breakpoint
	detailAt  time.Time

	detail  map[string]detailResult
	note    string
	noteErr bool
	noteAt  time.Time
	ended   bool
	// kubeEnded is set when the Source's Kubernetes Events channel closed.
	kubeEnded bool
	// rowsEnded is set when the Source's rows channel closed.
	rowsEnded bool

	// A scenario's goal met (how it holds), whether its banner waits to
	// open, and how many hints were shown.
	goalMet    string
	goalBanner bool
	hints      int
}

// New returns the UI model for src.
func New(src Source, opt Options) *Model {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	name := opt.Theme
	if name == "" {
		name = themes.DefaultName
	}
	c := &Common{Keys: DefaultKeyMap(), Now: opt.Now, Width: 80, Height: 24}
	c.SetTheme(themes.Get(name, opt.NoColor))
	m := &Model{src: src, c: c, store: lanes.New(), log: newEventLog(5000), pods: newPodsPane(c),
		evSel: -1, filter: lineInput{Prompt: "/"}, speed: 1, detail: map[string]detailResult{}}
	m.refreshStatus(opt.Now())
	if m.lesson() != nil {
		m.openLesson(false) // a scenario opens on its story
	}
	return m
}

type frameMsg time.Time

func frame() tea.Cmd {
	return tea.Tick(frameInterval, func(t time.Time) tea.Msg { return frameMsg(t) })
}

// Init starts the frame loop.
func (m *Model) Init() tea.Cmd { return frame() }

// Update handles one message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.c.Width, m.c.Height = msg.Width, msg.Height
		m.clampScroll()
		return m, nil
	case frameMsg:
		m.onFrame()
		return m, tea.Batch(frame(), m.refreshDetail(false))
	case resultMsg:
		m.setNote(msg.text, msg.err)
		return m, nil
	case detailMsg:
		m.detail[msg.key] = msg.res
		return m, nil
	case tea.MouseWheelMsg:
		prev := m.selected()
		m.onWheel(msg)
		return m, m.selectionChanged(prev)
	case tea.MouseClickMsg:
		prev := m.selected()
		m.onClick(msg.Mouse())
		return m, m.selectionChanged(prev)
	case tea.KeyPressMsg:
		prev := m.selected()
		_, cmd := m.onKey(msg)
		return m, tea.Batch(cmd, m.selectionChanged(prev))
	}
	return m, nil
}

func (m *Model) refreshStatus(now time.Time) {
	m.status, m.statusAt = m.src.Status(), now
	m.pods.setStatus(m.status)
	if ck := m.src.Clock(); ck != nil {
		m.paused, m.speed, m.realTime = ck.Paused(), ck.Speed(), ck.RealTime()
	}
	if fc := m.src.Faults(); fc != nil {
		m.faultsN, m.heldN = len(fc.List()), len(fc.Held())
	}
	m.checkGoal()
	m.openGoalBanner()
}

func (m *Model) setNote(text string, isErr bool) {
	m.note, m.noteErr, m.noteAt = text, isErr, m.c.Now()
}

// selected returns the selected lane, or nil.
func (m *Model) selected() *lanes.Lane {
	rows := m.store.Rows()
	if m.sel < 0 || m.sel >= len(rows) {
		return nil
	}
	return rows[m.sel]
}

func (m *Model) selectedStage() stages.ID { return stages.Lifecycle[m.stage] }

// bodyHeight is the number of lines between the header and the footer.
func (m *Model) bodyHeight() int { return max(1, m.c.Height-2-len(m.footerLines(m.c.Width))) }

// lanesHeight is how many lane rows the pods pane shows (its header excluded).
func (m *Model) lanesHeight() int {
	if m.screen == screenPods {
		l, _ := m.split()
		return max(1, l-1)
	}
	return max(1, m.bodyHeight()-1)
}

// split shares the pods screen's height between the lanes (their header
// included) and the events under them: on tall terminals a strip (its
// separator not counted) that takes what the lanes do not need, at least
// eventsStrip lines; below, one line with the latest Warning, if any.
func (m *Model) split() (lanes, events int) {
	bh := m.bodyHeight()
	if !m.splitEvents() {
		if m.latestWarning() != nil && bh > 4 {
			return bh - 1, 1
		}
		return bh, 0
	}
	lanes = bh - eventsStrip - 1
	if need := len(m.store.Rows()) + 3; need < lanes { // header, rows, a spare line and "No pods yet"
		lanes = max(need, bh/3)
	}
	return lanes, bh - lanes - 1
}

func (m *Model) clampScroll() {
	n := len(m.store.Rows())
	if m.sel >= n {
		m.sel = n - 1
	}
	if m.sel < 0 {
		m.sel = 0
	}
	h := m.lanesHeight()
	if m.sel < m.top {
		m.top = m.sel
	}
	if m.sel >= m.top+h {
		m.top = m.sel - h + 1
	}
	if m.top > max(0, n-h) {
		m.top = max(0, n-h)
	}
}

func (m *Model) move(d int) {
	m.sel += d
	m.clampScroll()
	m.detailTop = 0
}

func (m *Model) onWheel(msg tea.MouseWheelMsg) {
	switch msg.Button {
	case tea.MouseWheelUp:
		if m.screen == screenEvents {
			m.moveEvent(-3)
		} else {
			m.move(-3)
		}
	case tea.MouseWheelDown:
		if m.screen == screenEvents {
			m.moveEvent(3)
		} else {
			m.move(3)
		}
	}
}

// selectionChanged fetches the newly selected pod's stored object when a
// detail is showing.
func (m *Model) selectionChanged(prev *lanes.Lane) tea.Cmd {
	if m.selected() == prev {
		return nil
	}
	return m.refreshDetail(true)
}

// onClick selects the lane and stage under the pointer on the pods screen.
func (m *Model) onClick(ms tea.Mouse) {
	if m.screen != screenPods || m.overlay != nil || ms.Button != tea.MouseLeft {
		return
	}
	row := ms.Y - 3 // header, tabs, column titles
	if row < 0 || row >= m.lanesHeight() || m.top+row >= len(m.store.Rows()) {
		return
	}
	m.sel = m.top + row
	lw := m.c.Width
	if m.wideDetail() {
		lw = m.c.Width - min(72, m.c.Width/3) - 1
	}
	lay := m.pods.layout(m.store.Rows(), lw)
	if lay.cells() > 0 && ms.X >= lay.left && ms.X < lay.left+lay.cells()*lay.cell {
		m.stage = min(len(stages.Lifecycle)-1, (ms.X-lay.left)/lay.cell)
	}
	m.detailTop = 0
}

// onKey routes a key: the open overlay or filter first, then global keys, then the screen.
func (m *Model) onKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	k := &m.c.Keys
	if msg.String() == "ctrl+c" {
		return m, tea.Quit
	}
	if m.overlay != nil {
		ov, cmd := m.overlay.update(m, msg)
		m.overlay = ov
		m.openGoalBanner()
		return m, cmd
	}
	if m.filtering {
		switch msg.String() {
		case "enter":
			m.filtering = false
			m.filter.Blur()
		case "esc":
			m.filtering = false
			m.filter.Blur()
			m.filter.SetValue("")
			m.store.SetFilter("")
		default:
			if m.filter.Update(msg) {
				m.store.SetFilter(m.filter.Value())
				m.sel, m.top = 0, 0
			}
			return m, nil
		}
		m.clampScroll()
		return m, nil
	}
	switch {
	case key.Matches(msg, k.Quit):
		return m, tea.Quit
	case key.Matches(msg, k.Help):
		m.overlay = &helpOverlay{}
	case key.Matches(msg, k.Tab):
		m.screen = (m.screen + 1) % screenDetail
		if m.screen == screenDetail {
			m.screen = screenPods
		}
	case key.Matches(msg, k.Events):
		m.screen = screenEvents
	case key.Matches(msg, k.Timeline):
		m.screen = screenTimeline
	case key.Matches(msg, k.Theme):
		m.c.SetTheme(themes.Get(themes.Next(m.c.Theme.Name), m.c.Theme.NoColor))
		m.setNote("theme: "+m.c.Theme.Name, false)
	case key.Matches(msg, k.Filter):
		m.filtering = true
		return m, m.filter.Focus()
	case key.Matches(msg, k.Back):
		switch {
		case m.screen == screenDetail:
			m.screen = m.back
		case m.screen != screenPods:
			m.screen = screenPods // esc leaves Events and Timeline too
		case m.store.Filter() != "":
			m.filter.SetValue("")
			m.store.SetFilter("")
		}
	case key.Matches(msg, k.Enter) && m.screen == screenEvents:
		if e := m.selectedEvent(); e != nil {
			m.overlay = &eventOverlay{e: *e}
		}
	case key.Matches(msg, k.Enter):
		if m.screen == screenDetail {
			m.screen = m.back
			return m, nil
		}
		m.back, m.screen, m.detailTop = m.screen, screenDetail, 0
		m.focusStage()
		return m, m.refreshDetail(true)
	case key.Matches(msg, k.NextProblem):
		m.nextProblem()
	case key.Matches(msg, k.Story), key.Matches(msg, k.Hint):
		m.openLesson(key.Matches(msg, k.Hint))
	case key.Matches(msg, k.Up):
		m.moveOrScroll(-1)
	case key.Matches(msg, k.Down):
		m.moveOrScroll(1)
	case key.Matches(msg, k.PageUp):
		m.pageOrScroll(-1)
	case key.Matches(msg, k.PageDown):
		m.pageOrScroll(1)
	case key.Matches(msg, k.Top):
		if m.screen == screenEvents {
			m.evSel = 0
		} else {
			m.sel = 0 // the events strip under the lanes keeps following the tail
		}
		m.clampScroll()
	case key.Matches(msg, k.Bottom):
		if m.screen == screenEvents {
			m.evSel = -1
		} else {
			m.sel = len(m.store.Rows()) - 1
		}
		m.clampScroll()
	case key.Matches(msg, k.Left):
		m.stage = max(0, m.stage-1)
		m.detailTop = 0
	case key.Matches(msg, k.Right):
		m.stage = min(len(stages.Lifecycle)-1, m.stage+1)
		m.detailTop = 0
	default:
		return m, m.command(msg)
	}
	return m, nil
}

func (m *Model) moveOrScroll(d int) {
	if m.screen == screenEvents {
		m.moveEvent(d)
		return
	}
	m.move(d)
	if m.screen == screenDetail {
		m.detailTop = 0
		m.focusStage()
	}
}

// Run starts the UI on the terminal and blocks until the user quits or ctx
// is done. It honours NO_COLOR whatever opt says.
func Run(ctx context.Context, src Source, opt Options) error {
	opt.NoColor = opt.NoColor || themes.NoColorEnv()
	// The renderer flushes at the frame rate: more often would only compare
	// unchanged frames.
	p := tea.NewProgram(New(src, opt), tea.WithContext(ctx), tea.WithFPS(int(time.Second/frameInterval)))
	_, err := p.Run()
	if err != nil && !(ctx.Err() != nil && errors.Is(err, tea.ErrProgramKilled)) {
		return fmt.Errorf("run ui: %w", err)
	}
	return nil
}
