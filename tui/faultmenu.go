package tui

import (
	"fmt"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/podtrace/podtrace/stages"
	"github.com/podtrace/podtrace/tui/lanes"
)

// faultMenu injects a fault at one stage and lists (and removes) the active ones.
type faultMenu struct {
	fc     FaultControl
	stage  stages.ID
	pod    string // namespace/name of the selected pod, "" when none
	node   string
	scope  int // index into scopes()
	items  []faultItem
	cursor int
}

// faultItem is one line of the menu: remove an active fault, or inject one.
type faultItem struct {
	label  string
	remove int          // fault ID to remove, when non-zero
	fault  stages.Fault // fault to inject (scope set on choice)
}

func newFaultMenu(fc FaultControl, stage stages.ID, l *lanes.Lane) *faultMenu {
	fm := &faultMenu{fc: fc, stage: stage}
	if l != nil && l.Kind == stages.KindPod {
		fm.pod, fm.node = l.Namespace+"/"+l.Name, l.Node
	}
	for _, f := range fc.List() {
		fm.items = append(fm.items, faultItem{label: fmt.Sprintf("remove #%d %s", f.ID, f), remove: f.ID})
	}
	variants := fc.Variants(stage)
	if len(variants) == 0 {
		variants = []stages.Variant{{Name: "", Description: "the stage's default failure"}}
	}
	for _, v := range variants {
		name := "fail"
		if v.Name != "" {
			name += ":" + v.Name
		}
		fm.items = append(fm.items, faultItem{label: fit(name, 26) + v.Description,
			fault: stages.Fault{Stage: stage, Kind: stages.Fail, Variant: v.Name}})
	}
	for _, d := range []time.Duration{2 * time.Second, 10 * time.Second, 30 * time.Second} {
		fm.items = append(fm.items, faultItem{label: fit("delay:"+d.String(), 26) + "the stage takes " + d.String() + " longer",
			fault: stages.Fault{Stage: stage, Kind: stages.Delay, Delay: d}})
	}
	fm.items = append(fm.items,
		faultItem{label: fit("hang", 26) + "never finishes until the fault is removed", fault: stages.Fault{Stage: stage, Kind: stages.Hang}},
		faultItem{label: fit("flake:1", 26) + "fails the next attempt, then recovers", fault: stages.Fault{Stage: stage, Kind: stages.Flake, Count: 1}},
		faultItem{label: fit("flake:3", 26) + "fails the next 3 attempts", fault: stages.Fault{Stage: stage, Kind: stages.Flake, Count: 3}},
	)
	if fm.pod == "" {
		fm.scope = 2 // no pod selected: every pod
	}
	// Start on the active fault (this stage's, if any); without one, on the
	// first fault to inject.
	if faults := fc.List(); len(faults) > 0 {
		for i, f := range faults {
			if f.Stage == stage {
				fm.cursor = i
				return fm
			}
		}
		return fm
	}
	for fm.cursor < len(fm.items)-1 && fm.items[fm.cursor].remove != 0 {
		fm.cursor++
	}
	return fm
}

// scopes lists the scopes the menu offers, in tab order.
func (fm *faultMenu) scopes() []stages.Scope {
	return []stages.Scope{{Pod: fm.pod}, {Node: fm.node}, {}}
}

func (fm *faultMenu) scopeOK(i int) bool {
	switch i {
	case 0:
		return fm.pod != ""
	case 1:
		return fm.node != ""
	}
	return true
}

func (fm *faultMenu) title() string { return "Faults at " + string(fm.stage) }

// wide gives the faults' descriptions, upstream's words, room to be read.
func (*faultMenu) wide() bool { return true }

func (fm *faultMenu) update(m *Model, msg tea.KeyPressMsg) (overlay, tea.Cmd) {
	k := &m.c.Keys
	switch {
	case key.Matches(msg, k.Up):
		fm.cursor = max(0, fm.cursor-1)
	case key.Matches(msg, k.Down):
		fm.cursor = min(len(fm.items)-1, fm.cursor+1)
	case key.Matches(msg, k.Tab):
		for i := 1; i <= 3; i++ {
			if n := (fm.scope + i) % 3; fm.scopeOK(n) {
				fm.scope = n
				break
			}
		}
	case key.Matches(msg, k.Back), key.Matches(msg, k.Fault):
		return nil, nil
	case key.Matches(msg, k.Enter):
		it := fm.items[fm.cursor]
		fc := fm.fc
		if it.remove != 0 {
			id := it.remove
			return nil, do(fmt.Sprintf("fault #%d removed", id), func() error { return fc.Remove(id) })
		}
		f := it.fault
		f.Scope = fm.scopes()[fm.scope]
		return nil, func() tea.Msg {
			got, err := fc.Add(f)
			if err != nil {
				return resultMsg{text: "fault " + f.String() + ": " + err.Error(), err: true}
			}
			return resultMsg{text: fmt.Sprintf("fault #%d injected: %s", got.ID, got)}
		}
	}
	return fm, nil
}

func (fm *faultMenu) view(m *Model, w, h int) []string {
	pt := &m.c.Paint
	info := fm.stage.Describe()
	out := []string{pt.S(pMuted, clip(info.Component+": "+info.Summary, w))}
	scopeLine := "scope (tab): "
	for i, label := range []string{"this pod", "its node " + fm.node, "every pod"} {
		if !fm.scopeOK(i) {
			continue
		}
		if i == fm.scope {
			scopeLine += pt.S(pSelCell, "["+label+"]") + " "
		} else {
			scopeLine += label + " "
		}
	}
	out = append(out, scopeLine, pt.S(pMuted, clip("target: "+fm.scopes()[fm.scope].String(), w)), "")
	// Keep the cursor visible when the list is longer than the box.
	avail := max(1, h-len(out)-1)
	start := 0
	if fm.cursor >= avail {
		start = fm.cursor - avail + 1
	}
	for i := start; i < len(fm.items) && i < start+avail; i++ {
		it := fm.items[i]
		line := it.label
		if i == fm.cursor {
			out = append(out, pt.S(pSelected, fit(m.c.Theme.Symbols.Cursor+" "+line, w)))
			continue
		}
		if it.remove != 0 {
			line = pt.S(pWarning, clip(line, w-2))
		}
		out = append(out, "  "+line)
	}
	out = append(out, pt.S(pMuted, "enter: inject/remove   tab: scope   esc: close"))
	return out
}
