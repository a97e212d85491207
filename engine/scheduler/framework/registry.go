package framework

import (
	"fmt"
	"sort"
)

// Factory builds a plugin. h is nil for plugins that do not need it.
type Factory func(h Handle) (Plugin, error)

// Registry maps plugin names to their factories.
type Registry map[string]Factory

// Register adds a factory; it fails if the name is taken.
func (r Registry) Register(name string, f Factory) error {
	if _, ok := r[name]; ok {
		return fmt.Errorf("plugin %q already registered", name)
	}
	r[name] = f
	return nil
}

// Names returns the registered names, sorted.
func (r Registry) Names() []string {
	out := make([]string, 0, len(r))
	for n := range r {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
