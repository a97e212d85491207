package tui

import (
	"fmt"
	"os"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/podtrace/podtrace/stages"
)

// overlay is a box drawn over the screen that takes the keys while open.
// update returns the overlay to keep (nil closes it).
type overlay interface {
	update(m *Model, msg tea.KeyPressMsg) (overlay, tea.Cmd)
	// view returns the box's lines, at most w wide and h high.
	view(m *Model, w, h int) []string
	title() string
}

// helpOverlay shows every key.
type helpOverlay struct{}

func (*helpOverlay) title() string { return "Keys" }

func (h *helpOverlay) update(m *Model, msg tea.KeyPressMsg) (overlay, tea.Cmd) {
	if key.Matches(msg, m.c.Keys.Quit) && msg.String() == "ctrl+c" {
		return nil, tea.Quit
	}
	return nil, nil // any key closes help
}

// view lays every binding out in as many columns of colW as fit, group after group.
func (h *helpOverlay) view(m *Model, w, ht int) []string {
	pt := &m.c.Paint
	const colW = 24
	cols := max(1, w/colW)
	off := m.unavailableKeys()
	sy := m.c.Theme.Symbols
	var cells []string
	for _, group := range m.c.Keys.FullHelp() {
		for _, b := range group {
			hb := b.Help()
			if off[hb.Key] {
				continue // not advertised where it cannot be served
			}
			cells = append(cells, pt.S(pAccent, fit(hb.Key, 6))+" "+pt.S(pMuted, fit(hb.Desc, colW-8)))
		}
	}
	rows := (len(cells) + cols - 1) / cols
	lines := make([]string, rows)
	for i, c := range cells {
		lines[i%rows] += c + " "
	}
	legend := strings.Join([]string{sy.Pending + nbsp + "not" + nbsp + "reached", sy.Spinner[0] + nbsp + "running",
		sy.Done + nbsp + "done", sy.Failed + nbsp + "failed", sy.Retrying + nbsp + "retrying", sy.Waiting + nbsp + "held"}, "  ")
	n := len(off)
	if m.lesson() == nil {
		n -= 2 // no scenario, no story or hints: nothing to explain
	}
	if n > 0 {
		why := "not supported by " + m.src.Name()
		if m.status.ReadOnly != "" {
			why = m.status.ReadOnly
		}
		for _, l := range strings.Split(ansi.Wordwrap("Keys this source cannot serve are left out: "+why, w, ""), "\n") {
			lines = append(lines, pt.S(pMuted, clip(l, w)))
		}
	}
	lines = append(lines, "", pt.S(pBold, "Cells"))
	for _, l := range strings.Split(ansi.Wordwrap(legend, w, ""), "\n") {
		lines = append(lines, pt.S(pMuted, l))
	}
	for _, l := range strings.Split(ansi.Wordwrap(stageLegend(), w, ""), "\n") {
		lines = append(lines, pt.S(pMuted, l))
	}
	return append(lines, "", pt.S(pMuted, "Press any key to close."))
}

// unavailableKeys names (by help key) the bindings this Source cannot serve.
func (m *Model) unavailableKeys() map[string]bool {
	k := &m.c.Keys
	off := map[string]bool{}
	mark := func(bs ...key.Binding) {
		for _, b := range bs {
			off[b.Help().Key] = true
		}
	}
	if m.src.Faults() == nil {
		mark(k.Fault, k.Breakpoint, k.BreakAll, k.Step, k.Continue)
	}
	if m.src.Clock() == nil {
		mark(k.Pause, k.Faster, k.Slower, k.FastForward)
	}
	if m.status.ReadOnly != "" {
		mark(k.Apply, k.Delete, k.Scale)
	}
	if m.lesson() == nil {
		mark(k.Story, k.Hint)
	}
	return off
}

// wide makes the help box use the whole width.
func (h *helpOverlay) wide() bool { return true }

// prompt asks for one line of text.
type prompt struct {
	label  string
	input  lineInput
	submit func(string) tea.Cmd
}

func newPrompt(label, value string, submit func(string) tea.Cmd) *prompt {
	p := &prompt{label: label, submit: submit}
	p.input.SetValue(value)
	p.input.Focus()
	return p
}

func (p *prompt) title() string { return "Input" }

func (p *prompt) update(m *Model, msg tea.KeyPressMsg) (overlay, tea.Cmd) {
	switch msg.String() {
	case "enter":
		return nil, p.submit(p.input.Value())
	case "esc":
		return nil, note("cancelled", false)
	}
	p.input.Update(msg)
	return p, nil
}

func (p *prompt) view(m *Model, w, h int) []string {
	return []string{m.c.Paint.S(pBold, p.label) + p.input.View(), "", m.c.Paint.S(pMuted, "enter to confirm, esc to cancel")}
}

// confirm asks a yes/no question: y or enter says yes, n or esc no.
type confirm struct {
	question string
	yes, no  tea.Cmd
}

func (c *confirm) title() string { return "Confirm" }

func (c *confirm) update(m *Model, msg tea.KeyPressMsg) (overlay, tea.Cmd) {
	switch strings.ToLower(msg.String()) {
	case "y", "enter":
		return nil, c.yes
	case "n", "esc":
		return nil, c.no
	}
	return c, nil
}

func (c *confirm) view(m *Model, w, h int) []string {
	return []string{m.c.Paint.S(pBold, c.question), "", m.c.Paint.S(pMuted, "y or enter to confirm, n or esc to cancel")}
}

// applyPicker offers the built-in workloads and a manifest file.
type applyPicker struct {
	items  []Workload
	cursor int
}

func newApplyPicker(ws []Workload) *applyPicker {
	items := append([]Workload(nil), ws...)
	items = append(items, Workload{Name: "manifest file…", Description: "apply a YAML file from disk"})
	return &applyPicker{items: items}
}

func (a *applyPicker) title() string { return "Apply" }

func (a *applyPicker) update(m *Model, msg tea.KeyPressMsg) (overlay, tea.Cmd) {
	k := &m.c.Keys
	switch {
	case key.Matches(msg, k.Up):
		a.cursor = max(0, a.cursor-1)
	case key.Matches(msg, k.Down):
		a.cursor = min(len(a.items)-1, a.cursor+1)
	case key.Matches(msg, k.Back):
		return nil, nil
	case key.Matches(msg, k.Enter):
		if a.cursor == len(a.items)-1 {
			p := newPrompt("Manifest file: ", "", func(path string) tea.Cmd {
				path = strings.TrimSpace(path)
				return do("applied "+path, func() error {
					b, err := os.ReadFile(path)
					if err != nil {
						return fmt.Errorf("apply: %w", err)
					}
					return m.src.Apply(b)
				})
			})
			return p, p.input.Focus()
		}
		w := a.items[a.cursor]
		return nil, do("applied workload "+w.Name, func() error { return m.src.Apply(w.Manifest) })
	}
	return a, nil
}

func (a *applyPicker) view(m *Model, w, h int) []string {
	out := []string{m.c.Paint.S(pMuted, "Pick a workload to apply (enter), esc to cancel"), ""}
	for i, it := range a.items {
		line := fit(it.Name, 20) + " " + it.Description
		if i == a.cursor {
			out = append(out, m.c.Paint.S(pSelected, fit(m.c.Theme.Symbols.Cursor+" "+line, w)))
		} else {
			out = append(out, "  "+clip(line, w-2))
		}
	}
	return out
}

// drawOverlay draws the box centred over the body lines.
func drawOverlay(m *Model, ov overlay, body []string, w, h int) []string {
	bw := min(w-4, max(60, w*2/3))
	if wd, ok := ov.(interface{ wide() bool }); ok && wd.wide() {
		bw = min(w-2, 100)
	}
	bh := h - 2
	inner := ov.view(m, bw-4, bh-2)
	if len(inner) > bh-2 {
		inner = inner[:bh-2]
	}
	pt := &m.c.Paint
	box := make([]string, 0, len(inner)+2)
	title := " " + ov.title() + " "
	box = append(box, pt.S(pBorder, "╭─")+pt.S(pTitle, title)+pt.S(pBorder, strings.Repeat("─", max(0, bw-3-len([]rune(title))))+"╮"))
	for _, l := range inner {
		box = append(box, pt.S(pBorder, "│")+" "+fit(l, bw-4)+" "+pt.S(pBorder, "│"))
	}
	box = append(box, pt.S(pBorder, "╰"+strings.Repeat("─", bw-2)+"╯"))
	top := max(0, (h-len(box))/2)
	left := (w - bw) / 2
	out := make([]string, max(h, len(body)))
	copy(out, body)
	for i, l := range box {
		if top+i >= len(out) {
			break
		}
		out[top+i] = spaces(left) + l
	}
	return out
}

// nbsp joins what wrapping must keep on one line, such as a symbol and
// its meaning: it is drawn as a space.
const nbsp = "\u00a0"

// stageLegend explains the stage columns' short headers: "au authn  az authz ...".
func stageLegend() string {
	parts := make([]string, 0, len(stages.Lifecycle))
	for _, id := range stages.Lifecycle {
		parts = append(parts, id.Describe().Short+nbsp+string(id))
	}
	return "Stages: " + strings.Join(parts, "  ")
}
