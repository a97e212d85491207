package tui

import "charm.land/bubbles/v2/key"

// KeyMap is every key the UI answers to. It implements help.KeyMap.
type KeyMap struct {
	Up, Down, Left, Right    key.Binding
	PageUp, PageDown         key.Binding
	Top, Bottom              key.Binding
	Enter, Back, Filter, Tab key.Binding
	Apply, Delete, Scale     key.Binding
	Fault, Breakpoint        key.Binding
	BreakAll                 key.Binding
	Step, Continue           key.Binding
	Pause, Faster, Slower    key.Binding
	FastForward              key.Binding
	Timeline, Events, Theme  key.Binding
	NextProblem              key.Binding
	Story, Hint              key.Binding
	Help, Quit               key.Binding
}

// DefaultKeyMap returns podtrace's keys.
func DefaultKeyMap() KeyMap {
	b := func(keys []string, k, desc string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(k, desc))
	}
	return KeyMap{
		Up:          b([]string{"k", "up"}, "↑/k", "up"),
		Down:        b([]string{"j", "down"}, "↓/j", "down"),
		Left:        b([]string{"h", "left"}, "←/h", "prev stage"),
		Right:       b([]string{"l", "right"}, "→/l", "next stage"),
		PageUp:      b([]string{"pgup", "ctrl+u"}, "pgup", "page up"),
		PageDown:    b([]string{"pgdown", "ctrl+d"}, "pgdn", "page down"),
		Top:         b([]string{"g", "home"}, "g", "top"),
		Bottom:      b([]string{"G", "end"}, "G", "bottom"),
		Enter:       b([]string{"enter"}, "enter", "details"),
		NextProblem: b([]string{"!"}, "!", "next failing pod"),
		Story:       b([]string{"S"}, "S", "scenario story"),
		Hint:        b([]string{"H"}, "H", "scenario hint"),
		Back:        b([]string{"esc"}, "esc", "back"),
		Filter:      b([]string{"/"}, "/", "filter"),
		Tab:         b([]string{"tab"}, "tab", "switch pane"),
		Apply:       b([]string{"a"}, "a", "apply workload"),
		Delete:      b([]string{"d"}, "d", "delete pod"),
		Scale:       b([]string{"s"}, "s", "scale owner"),
		Fault:       b([]string{"f"}, "f", "faults at stage"),
		Breakpoint:  b([]string{"b"}, "b", "break (this pod)"),
		BreakAll:    b([]string{"B"}, "B", "break (all pods)"),
		Step:        b([]string{"n"}, "n", "step held pod"),
		Continue:    b([]string{"c"}, "c", "continue (C all)"),
		Pause:       b([]string{"space"}, "space", "pause"),
		Faster:      b([]string{"+", "="}, "+", "faster"),
		Slower:      b([]string{"-", "_"}, "-", "slower"),
		FastForward: b([]string{">"}, ">", "fast-forward"),
		Timeline:    b([]string{"T"}, "T", "timeline"),
		Events:      b([]string{"e"}, "e", "events"),
		Theme:       b([]string{"t"}, "t", "theme"),
		Help:        b([]string{"?"}, "?", "help"),
		Quit:        b([]string{"q", "ctrl+c"}, "q", "quit"),
	}
}

// ShortHelp is the footer.
func (k KeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Enter, k.Tab, k.Story, k.Hint, k.Filter, k.Apply, k.Fault, k.Pause, k.Help, k.Quit}
}

// FullHelp is the help overlay, one column per group.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Up, k.Down, k.Left, k.Right, k.PageUp, k.PageDown, k.Top, k.Bottom, k.NextProblem},
		{k.Enter, k.Back, k.Tab, k.Events, k.Timeline, k.Filter, k.Theme, k.Story, k.Hint, k.Help, k.Quit},
		{k.Apply, k.Delete, k.Scale, k.Fault, k.Breakpoint, k.BreakAll, k.Step, k.Continue},
		{k.Pause, k.Faster, k.Slower, k.FastForward},
	}
}
