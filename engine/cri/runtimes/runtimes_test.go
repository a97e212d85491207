package runtimes

import (
	"context"
	"testing"
)

// Every --runtime name finds its entry, "" the simulated default; an
// unknown name none.
func TestLookup(t *testing.T) {
	for _, tt := range []struct {
		name string
		want string // "" when none
		real bool
	}{
		{"", "sim", false},
		{"sim", "sim", false},
		{"containerd", "containerd", true},
		{"docker", "", false},
	} {
		r, ok := Lookup(tt.name)
		if ok != (tt.want != "") || r.Name != tt.want || r.Real != tt.real {
			t.Errorf("Lookup(%q) = %q (real %t), %t; want %q (real %t)", tt.name, r.Name, r.Real, ok, tt.want, tt.real)
		}
	}
}

// Each entry says what --help and the flags' errors need, under a name
// of its own.
func TestEntries(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range All {
		if r.Name == "" || r.Usage == "" || r.Called == "" || r.Start == nil || seen[r.Name] {
			t.Errorf("entry %q: a name of its own, Usage, Called and Start are required", r.Name)
		}
		seen[r.Name] = true
	}
	if All[0].Real {
		t.Errorf("the default, %s, needs root and Linux", All[0].Name)
	}
}

// The simulated runtime starts nothing for the process: its nodes share
// the process's network (no Gateway) and closing it does nothing.
func TestSimulated(t *testing.T) {
	h, err := All[0].Start(context.Background(), Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if h.NewNode == nil || h.Gateway != nil {
		t.Errorf("simulated host: NewNode set %t, Gateway set %t; want a factory and no gateway", h.NewNode != nil, h.Gateway != nil)
	}
	if err := h.Close(context.Background()); err != nil {
		t.Errorf("Close: %v", err)
	}
}
