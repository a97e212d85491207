package controllerutil

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// ExpectationsTimeout is how long expectations hold before a controller
// syncs anyway, as upstream.
const ExpectationsTimeout = 5 * time.Minute

// Expectations remembers, per controller key, how many creations it still
// expects to observe through its informers and which pods it expects to see
// deleted, so that it does not act twice on a stale cache (upstream's
// UIDTrackingControllerExpectations). It is safe for concurrent use.
type Expectations struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	m     map[string]*expectation
}

type expectation struct {
	adds      int64
	deletes   map[string]bool // pod keys expected to go
	timestamp time.Time
}

// NewExpectations returns empty expectations timed by clk.
func NewExpectations(clk clock.PassiveClock) *Expectations {
	return &Expectations{clock: clk, m: map[string]*expectation{}}
}

// Satisfied reports whether key may sync: nothing is pending, the
// expectations expired, or there are none.
func (e *Expectations) Satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.m[key]
	if !ok {
		return true
	}
	if x.adds <= 0 && len(x.deletes) == 0 {
		return true
	}
	return e.clock.Since(x.timestamp) > ExpectationsTimeout
}

// ExpectCreations records that key is about to create n pods.
func (e *Expectations) ExpectCreations(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m[key] = &expectation{adds: int64(n), deletes: map[string]bool{}, timestamp: e.clock.Now()}
}

// ExpectDeletions records that key is about to delete the pods podKeys.
func (e *Expectations) ExpectDeletions(key string, podKeys []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := &expectation{deletes: map[string]bool{}, timestamp: e.clock.Now()}
	for _, k := range podKeys {
		x.deletes[k] = true
	}
	e.m[key] = x
}

// CreationObserved lowers key's pending creations by one.
func (e *Expectations) CreationObserved(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		x.adds--
	}
}

// DeletionObserved records that the pod podKey is gone (or will not go).
func (e *Expectations) DeletionObserved(key, podKey string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		delete(x.deletes, podKey)
	}
}

// Delete forgets key.
func (e *Expectations) Delete(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}
