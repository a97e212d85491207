package tui

import (
	"strconv"
	"strings"
	"time"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/podtrace/podtrace/themes"
)

// Common is what every child model shares: the terminal size, the theme and
// its precomputed paints, the keymap and the wall clock.
type Common struct {
	Width, Height int
	Theme         themes.Theme
	Paint         Paint
	Keys          KeyMap
	// Now is the wall clock; tests fix it so that views are stable.
	Now func() time.Time
}

// SetTheme switches the theme and recomputes the paints.
func (c *Common) SetTheme(t themes.Theme) {
	c.Theme = t
	c.Paint = NewPaint(t.Styles)
}

// Paint indices: each names one style of the theme.
const (
	pText = iota
	pMuted
	pAccent
	pBold
	pPending
	pRunning
	pDone
	pFailed
	pRetrying
	pWaiting
	pSelected
	pSelCell
	pError
	pWarning
	pHeader
	pTitle
	pBorder
	pTab
	pTabActive
	nPaint
)

// Paint holds the escape sequences that open and close each style, taken
// once from the theme, so that drawing a cell is two string concatenations
// instead of a lipgloss render.
type Paint struct {
	open, close [nPaint]string
}

// NewPaint precomputes the paints of a theme's styles.
func NewPaint(s themes.Styles) Paint {
	var p Paint
	for i, st := range []lipgloss.Style{s.Text, s.Muted, s.Accent, s.Bold, s.Pending, s.Running, s.Done,
		s.Failed, s.Retrying, s.Waiting, s.Selected, s.SelectedCell, s.Error, s.Warning, s.Header, s.Title,
		s.Border, s.Tab, s.TabActive} {
		out := st.Render("X")
		j := strings.IndexByte(out, 'X')
		p.open[i], p.close[i] = out[:j], out[j+1:]
	}
	return p
}

// S wraps text in paint i.
func (p *Paint) S(i int, text string) string {
	if text == "" {
		return ""
	}
	return p.open[i] + text + p.close[i]
}

// fit truncates s to w cells (with an ellipsis) or pads it with spaces to w.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if plain(s) {
		if len(s) > w {
			return s[:w-1] + "…"
		}
		return s + spaces(w-len(s))
	}
	sw := ansi.StringWidth(s)
	if sw > w {
		return ansi.Truncate(s, w, "…")
	}
	return s + spaces(w-sw)
}

// clip truncates s to w cells without padding.
func clip(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if plain(s) {
		if len(s) > w {
			return s[:w-1] + "…"
		}
		return s
	}
	if ansi.StringWidth(s) > w {
		return ansi.Truncate(s, w, "…")
	}
	return s
}

// plain reports whether s is printable ASCII without escapes, so that its
// width is its length.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

var spaceRun = strings.Repeat(" ", 512)

func spaces(n int) string {
	if n <= 0 {
		return ""
	}
	if n <= len(spaceRun) {
		return spaceRun[:n]
	}
	return strings.Repeat(" ", n)
}

// fmtDur renders a duration in at most five characters: 0ms, 12ms, 1.2s, 45s, 3m05, 2h.
func fmtDur(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Second:
		return strconv.Itoa(int(d/time.Millisecond)) + "ms"
	case d < 10*time.Second:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "s"
	case d < time.Hour:
		s := int(d/time.Second) % 60
		return strconv.Itoa(int(d/time.Minute)) + "m" + pad2(s)
	}
	return strconv.Itoa(int(d/time.Hour)) + "h"
}

// fmtDur4 renders a duration in at most four characters, for narrow cells:
// 12ms, 0.4s, 9.5s, 45s, 12m, 3h.
func fmtDur4(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < 100*time.Millisecond:
		return strconv.Itoa(int(d/time.Millisecond)) + "ms"
	case d < 10*time.Second:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	case d < 100*time.Second:
		return strconv.Itoa(int(d/time.Second)) + "s"
	case d < 100*time.Minute:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	}
	return strconv.Itoa(int(d/time.Hour)) + "h"
}

func pad2(n int) string {
	if n < 10 {
		return "0" + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}

// fmtAge renders a duration in whole units as kubectl's short form
// (duration.ShortHumanDuration): 5s, 3m, 2h, 4d; never negative.
func fmtAge(d time.Duration) string {
	return duration.ShortHumanDuration(max(d, 0))
}

// ago renders how long before now t was, as kubectl prints an Event's
// LAST SEEN and an object's AGE (duration.HumanDuration: 45s, 3m20s, 2h):
// "0s" for a time after now (another machine's clock ahead of ours),
// kubectl's "<unknown>" for no time at all.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(max(now.Sub(t), 0))
}

// fmtSpeed renders a speed: 1×, 4×, 0.5×.
func fmtSpeed(s float64) string {
	return strconv.FormatFloat(s, 'g', 3, 64) + "×"
}
