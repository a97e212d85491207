package framework

import "fmt"

// StateKey names one piece of data in a CycleState.
type StateKey string

// CycleState holds the data plugins share during one scheduling attempt.
// PreFilter, PreScore and PostFilter write it; Filter and Score read it,
// concurrently for different nodes. Writes must not run concurrently with
// reads, which the framework's phases guarantee; reads take no lock.
type CycleState struct {
	// data is a handful of entries (one or two per plugin): a slice scanned
	// in order is cheaper to read, per node and plugin, than a map.
	data []stateEntry
	// filters are the filter plugins that did not ask to be skipped in
	// PreFilter; set once before the filters run, read-only afterwards.
	filters    []FilterPlugin
	filtersSet bool
}

type stateEntry struct {
	key StateKey
	v   any
}

// NewCycleState returns an empty state.
func NewCycleState() *CycleState { return &CycleState{} }

// Write stores v under key.
func (c *CycleState) Write(key StateKey, v any) {
	for i := range c.data {
		if c.data[i].key == key {
			c.data[i].v = v
			return
		}
	}
	c.data = append(c.data, stateEntry{key, v})
}

// Read returns the value stored under key.
func (c *CycleState) Read(key StateKey) (any, error) {
	for i := range c.data {
		if c.data[i].key == key {
			return c.data[i].v, nil
		}
	}
	return nil, fmt.Errorf("reading %q from cycle state: not found", key)
}
