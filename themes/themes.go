// Package themes turns podtrace's semantic colours (a stage that is done,
// failed, retrying, ...) into lipgloss styles and symbols. Every state has a
// symbol as well as a colour, so nothing is shown by colour alone, and the
// NO_COLOR convention (https://no-color.org) strips the colours but keeps
// bold, reverse and the symbols.
package themes

import (
	"image/color"
	"os"

	"charm.land/lipgloss/v2"
)

// Names of the built-in themes, in the order the theme key cycles through them.
const (
	Dark         = "dark"
	Light        = "light"
	HighContrast = "high-contrast"
	ColorBlind   = "colorblind"
	DefaultName  = Dark
)

// Palette is a theme's semantic colours.
type Palette struct {
	Text, Muted, Accent, Border, SelectBg, SelectFg   color.Color
	Pending, Running, Done, Failed, Retrying, Waiting color.Color
	HeaderBg, HeaderFg                                color.Color
}

// Symbols are the glyphs that show a state without relying on colour.
type Symbols struct {
	Pending  string   // stage not reached
	Spinner  []string // stage in progress, one frame per tick
	Done     string
	Failed   string
	Retrying string
	Waiting  string // held at a breakpoint or hanging
	// Unobservable marks a stage the Source cannot see (a real cluster's authn, say).
	Unobservable string
	Cursor       string // marks the selected row
	Expanded     string // marks an owner row (Deployment, ReplicaSet)
}

// Styles are the lipgloss styles the UI draws with.
type Styles struct {
	Text, Muted, Accent, Bold                         lipgloss.Style
	Header, Title, Tab, TabActive                     lipgloss.Style
	Selected, SelectedCell                            lipgloss.Style
	Pending, Running, Done, Failed, Retrying, Waiting lipgloss.Style
	Warning, Error                                    lipgloss.Style
	Border                                            lipgloss.Style
	HelpKey, HelpDesc, HelpSep                        lipgloss.Style
}

// Theme is a named set of styles and symbols.
type Theme struct {
	Name    string
	NoColor bool
	Styles  Styles
	Symbols Symbols
}

var palettes = map[string]Palette{
	Dark: {
		Text: lipgloss.Color("#d0d0d0"), Muted: lipgloss.Color("#808080"), Accent: lipgloss.Color("#5fafff"),
		Border: lipgloss.Color("#4e4e4e"), SelectBg: lipgloss.Color("#303a4a"), SelectFg: lipgloss.Color("#ffffff"),
		Pending: lipgloss.Color("#5f5f5f"), Running: lipgloss.Color("#5fafff"), Done: lipgloss.Color("#5fd75f"),
		Failed: lipgloss.Color("#ff5f5f"), Retrying: lipgloss.Color("#ffaf00"), Waiting: lipgloss.Color("#d787ff"),
		HeaderBg: lipgloss.Color("#262626"), HeaderFg: lipgloss.Color("#e4e4e4"),
	},
	Light: {
		Text: lipgloss.Color("#262626"), Muted: lipgloss.Color("#767676"), Accent: lipgloss.Color("#005fd7"),
		Border: lipgloss.Color("#bcbcbc"), SelectBg: lipgloss.Color("#d7e7ff"), SelectFg: lipgloss.Color("#000000"),
		Pending: lipgloss.Color("#a8a8a8"), Running: lipgloss.Color("#005fd7"), Done: lipgloss.Color("#008700"),
		Failed: lipgloss.Color("#d70000"), Retrying: lipgloss.Color("#af5f00"), Waiting: lipgloss.Color("#8700af"),
		HeaderBg: lipgloss.Color("#e4e4e4"), HeaderFg: lipgloss.Color("#000000"),
	},
	HighContrast: {
		Text: lipgloss.Color("#ffffff"), Muted: lipgloss.Color("#c0c0c0"), Accent: lipgloss.Color("#00ffff"),
		Border: lipgloss.Color("#ffffff"), SelectBg: lipgloss.Color("#ffff00"), SelectFg: lipgloss.Color("#000000"),
		Pending: lipgloss.Color("#c0c0c0"), Running: lipgloss.Color("#00ffff"), Done: lipgloss.Color("#00ff00"),
		Failed: lipgloss.Color("#ff0000"), Retrying: lipgloss.Color("#ffff00"), Waiting: lipgloss.Color("#ff00ff"),
		HeaderBg: lipgloss.Color("#000000"), HeaderFg: lipgloss.Color("#ffffff"),
	},
	// ColorBlind uses the Okabe–Ito palette: blue for done, vermillion for
	// failed, orange for retrying, so red–green confusion never hides a state.
	ColorBlind: {
		Text: lipgloss.Color("#e0e0e0"), Muted: lipgloss.Color("#8a8a8a"), Accent: lipgloss.Color("#56b4e9"),
		Border: lipgloss.Color("#5a5a5a"), SelectBg: lipgloss.Color("#2f3b46"), SelectFg: lipgloss.Color("#ffffff"),
		Pending: lipgloss.Color("#6a6a6a"), Running: lipgloss.Color("#56b4e9"), Done: lipgloss.Color("#0072b2"),
		Failed: lipgloss.Color("#d55e00"), Retrying: lipgloss.Color("#e69f00"), Waiting: lipgloss.Color("#cc79a7"),
		HeaderBg: lipgloss.Color("#262626"), HeaderFg: lipgloss.Color("#f0f0f0"),
	},
}

// Names lists the built-in themes in cycling order.
func Names() []string { return []string{Dark, Light, HighContrast, ColorBlind} }

// Next returns the theme after name in Names, wrapping around.
func Next(name string) string {
	ns := Names()
	for i, n := range ns {
		if n == name {
			return ns[(i+1)%len(ns)]
		}
	}
	return DefaultName
}

// NoColorEnv reports whether the NO_COLOR environment variable asks for no colour.
func NoColorEnv() bool { return os.Getenv("NO_COLOR") != "" }

// Get returns the named theme (the default for an unknown name). With
// noColor the styles keep their attributes (bold, reverse) but lose colours.
func Get(name string, noColor bool) Theme {
	p, ok := palettes[name]
	if !ok {
		name, p = DefaultName, palettes[DefaultName]
	}
	t := Theme{Name: name, NoColor: noColor, Symbols: symbols(name)}
	t.Styles = build(p, noColor, name == HighContrast)
	return t
}

func symbols(name string) Symbols {
	s := Symbols{
		Pending: "·", Spinner: []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"},
		Done: "✓", Failed: "✗", Retrying: "↻", Waiting: "⏸", Unobservable: "–", Cursor: "▶", Expanded: "▾",
	}
	if name == HighContrast {
		s.Pending = "○"
		s.Done = "●"
	}
	return s
}

func build(p Palette, noColor, heavy bool) Styles {
	fg := func(c color.Color) lipgloss.Style {
		if noColor {
			return lipgloss.NewStyle()
		}
		return lipgloss.NewStyle().Foreground(c)
	}
	bg := func(s lipgloss.Style, c color.Color) lipgloss.Style {
		if noColor {
			return s
		}
		return s.Background(c)
	}
	s := Styles{
		Text:      fg(p.Text),
		Muted:     fg(p.Muted),
		Accent:    fg(p.Accent),
		Bold:      fg(p.Text).Bold(true),
		Header:    bg(fg(p.HeaderFg), p.HeaderBg),
		Title:     fg(p.Accent).Bold(true),
		Tab:       fg(p.Muted),
		TabActive: fg(p.Accent).Bold(true).Underline(true),
		Pending:   fg(p.Pending),
		Running:   fg(p.Running),
		Done:      fg(p.Done),
		Failed:    fg(p.Failed).Bold(true),
		Retrying:  fg(p.Retrying).Bold(true),
		Waiting:   fg(p.Waiting).Bold(true),
		Warning:   fg(p.Retrying),
		Error:     fg(p.Failed).Bold(true),
		Border:    fg(p.Border),
		HelpKey:   fg(p.Accent).Bold(true),
		HelpDesc:  fg(p.Muted),
		HelpSep:   fg(p.Border),
	}
	if noColor {
		s.Selected = lipgloss.NewStyle().Reverse(true)
		s.SelectedCell = lipgloss.NewStyle().Reverse(true).Bold(true)
	} else {
		s.Selected = lipgloss.NewStyle().Background(p.SelectBg).Foreground(p.SelectFg)
		s.SelectedCell = lipgloss.NewStyle().Reverse(true).Bold(true)
	}
	if heavy {
		s.Done = s.Done.Bold(true)
		s.Running = s.Running.Bold(true)
		s.Text = s.Text.Bold(true)
	}
	return s
}
