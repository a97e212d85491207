package themes

import (
	"strings"
	"testing"
)

func TestEveryThemeShowsStatesBySymbolAndColour(t *testing.T) {
	for _, name := range Names() {
		th := Get(name, false)
		if th.Name != name {
			t.Fatalf("Get(%q).Name = %q", name, th.Name)
		}
		sy := th.Symbols
		seen := map[string]bool{}
		for _, s := range []string{sy.Pending, sy.Spinner[0], sy.Done, sy.Failed, sy.Retrying, sy.Waiting, sy.Unobservable} {
			if s == "" || seen[s] {
				t.Errorf("theme %s: state symbol %q empty or shared between states", name, s)
			}
			seen[s] = true
		}
		st := th.Styles
		if st.Done.Render("x") == st.Failed.Render("x") || st.Retrying.Render("x") == st.Failed.Render("x") {
			t.Errorf("theme %s: done, failed and retrying must differ in colour", name)
		}
		if !strings.Contains(st.Failed.Render("x"), "\x1b[") {
			t.Errorf("theme %s: failed style draws no colour", name)
		}
	}
}

func TestNoColorKeepsAttributesDropsColours(t *testing.T) {
	for _, name := range Names() {
		st := Get(name, true).Styles
		for _, out := range []string{st.Done.Render("x"), st.Failed.Render("x"), st.Header.Render("x"), st.Selected.Render("x")} {
			if strings.Contains(out, "38;2") || strings.Contains(out, "48;2") || strings.Contains(out, "38;5") {
				t.Errorf("theme %s with NO_COLOR still renders colour: %q", name, out)
			}
		}
		if !strings.Contains(st.Selected.Render("x"), "7") {
			t.Errorf("theme %s with NO_COLOR: selection must still show (reverse), got %q", name, st.Selected.Render("x"))
		}
	}
}

func TestNoColorEnv(t *testing.T) {
	t.Setenv("NO_COLOR", "1")
	if !NoColorEnv() {
		t.Fatal("NO_COLOR=1 not honoured")
	}
	t.Setenv("NO_COLOR", "")
	if NoColorEnv() {
		t.Fatal("empty NO_COLOR must not disable colour")
	}
}

func TestNextCyclesAndUnknownFallsBack(t *testing.T) {
	name := DefaultName
	for range Names() {
		name = Next(name)
	}
	if name != DefaultName {
		t.Fatalf("cycling through every theme ended at %q", name)
	}
	if Get("nope", false).Name != DefaultName || Next("nope") != DefaultName {
		t.Fatal("unknown theme must fall back to the default")
	}
}
