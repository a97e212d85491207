package tui

import (
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"
)

// lineInput is a one-line text field: typing appends, backspace deletes,
// ctrl+u clears. (bubbles' textinput pulls in a clipboard module podtrace
// does not otherwise need.)
type lineInput struct {
	Prompt string
	value  []rune
	focus  bool
}

// Value returns the text.
func (in *lineInput) Value() string { return string(in.value) }

// SetValue replaces the text.
func (in *lineInput) SetValue(s string) { in.value = []rune(s) }

// Focus starts taking keys.
func (in *lineInput) Focus() tea.Cmd { in.focus = true; return nil }

// Blur stops taking keys.
func (in *lineInput) Blur() { in.focus = false }

// Update applies one key; it reports whether the text changed.
func (in *lineInput) Update(msg tea.KeyPressMsg) bool {
	switch msg.String() {
	case "backspace", "ctrl+h":
		if len(in.value) > 0 {
			in.value = in.value[:len(in.value)-1]
			return true
		}
		return false
	case "ctrl+u":
		in.value = in.value[:0]
		return true
	}
	if msg.Text == "" || !utf8.ValidString(msg.Text) {
		return false
	}
	in.value = append(in.value, []rune(msg.Text)...)
	return true
}

// View draws the prompt, the text and a block cursor.
func (in *lineInput) View() string {
	cur := ""
	if in.focus {
		cur = "█"
	}
	return in.Prompt + string(in.value) + cur
}
