package framework

import "fmt"

// StateKey names one piece of data in a CycleState.
type StateKey string

// CycleState holds the data plugins share during one scheduling attempt.
// PreFilter, PreScore and PostFilter write it; Filter and Score read it,
// concurrently for different nodes. Writes must not run concurrently with
// reads, which the framework's phases guarantee; reads take no lock.
type CycleState struct {
	data map[StateKey]any
	// filters are the filter plugins that did not ask to be skipped in
	// PreFilter; set once before the filters run, read-only afterwards.
	filters    []FilterPlugin
	filtersSet bool
}

// NewCycleState returns an empty state.
func NewCycleState() *CycleState { return &CycleState{data: map[StateKey]any{}} }

// Write stores v under key.
func (c *CycleState) Write(key StateKey, v any) { c.data[key] = v }

// Read returns the value stored under key.
func (c *CycleState) Read(key StateKey) (any, error) {
	v, ok := c.data[key]
	if !ok {
		return nil, fmt.Errorf("reading %q from cycle state: not found", key)
	}
	return v, nil
}
