package framework

import (
	"fmt"
	"sync"
)

// StateKey names one piece of data in a CycleState.
type StateKey string

// CycleState holds the data plugins share during one scheduling attempt
// (PreFilter writes it, Filter and Score read it). It is safe for concurrent use.
type CycleState struct {
	mu   sync.RWMutex
	data map[StateKey]any
	// SkipFilter and SkipScore hold the plugins that asked to be skipped.
	skipFilter map[string]bool
	skipScore  map[string]bool
}

// NewCycleState returns an empty state.
func NewCycleState() *CycleState {
	return &CycleState{data: map[StateKey]any{}, skipFilter: map[string]bool{}, skipScore: map[string]bool{}}
}

// Write stores v under key.
func (c *CycleState) Write(key StateKey, v any) {
	c.mu.Lock()
	c.data[key] = v
	c.mu.Unlock()
}

// Read returns the value stored under key.
func (c *CycleState) Read(key StateKey) (any, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	v, ok := c.data[key]
	if !ok {
		return nil, fmt.Errorf("reading %q from cycle state: not found", key)
	}
	return v, nil
}
