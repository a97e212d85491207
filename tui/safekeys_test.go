package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// The keys that change the cluster say what they will do, and do what
// they say.
func TestSafeKeys(t *testing.T) {
	m, _, rec := fixture(120, 40, "dark")
	press(m, "j", "j", "d")
	if s := ansi.Strip(m.Render()); !strings.Contains(s, "Delete pod default/web-7d9c5b8f4-2xk9p?") || !strings.Contains(s, "enter to confirm") {
		t.Fatalf("delete prompt:\n%s", s)
	}
	press(m, "enter")
	if len(rec.calls) != 1 || rec.calls[0] != "delete default/web-7d9c5b8f4-2xk9p" {
		t.Fatalf("enter in the delete prompt: calls %v", rec.calls)
	}
	press(m, "d", "esc")
	if len(rec.calls) != 1 {
		t.Fatalf("esc in the delete prompt deleted: %v", rec.calls)
	}

	press(m, "s")
	if s := ansi.Strip(m.Render()); !strings.Contains(s, "Scale deployment/web (3 pods now) to replicas:") {
		t.Fatalf("the scale prompt does not show the current count:\n%s", s)
	}
	press(m, "esc")

	press(m, "f")
	fm, ok := m.overlay.(*faultMenu)
	if !ok || fm.items[fm.cursor].remove != 3 {
		t.Fatalf("the fault menu does not open on the active fault: %+v", m.overlay)
	}
	press(m, "esc")

	for _, k := range []string{"e", "T", "tab"} {
		press(m, k)
		if m.screen == screenPods {
			continue
		}
		press(m, "esc")
		if m.screen != screenPods {
			t.Errorf("esc does not leave %s", screenNames[m.screen])
		}
	}

	press(m, "/", "z", "z", "z", "enter")
	if s := ansi.Strip(m.Render()); !strings.Contains(s, `No lane matches the filter "zzz"`) {
		t.Errorf("a filter that matches nothing does not say so:\n%s", s)
	}
}
