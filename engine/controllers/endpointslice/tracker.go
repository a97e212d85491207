package endpointslice

import (
	"errors"
	"strconv"
	"sync"

	discoveryv1 "k8s.io/api/discovery/v1"
)

// errStale means the informer's cache does not yet show this controller's
// last writes for the Service; the sync is retried once it does (a slice
// event queues the Service again), as upstream's endpointSliceTracker makes
// it, so slices are not created twice.
var errStale = errors.New("endpointslice: informer cache is out of date")

// tracker remembers, per Service, the resourceVersion of each slice the
// controller last wrote (0 for a deleted one).
type tracker struct {
	mu     sync.Mutex
	slices map[string]map[string]int64 // service key → slice name → resourceVersion
}

func newTracker() *tracker { return &tracker{slices: map[string]map[string]int64{}} }

func rv(s *discoveryv1.EndpointSlice) int64 {
	n, _ := strconv.ParseInt(s.ResourceVersion, 10, 64)
	return n
}

// wrote records a created or updated slice, or a deleted one (deleted true).
func (t *tracker) wrote(key string, s *discoveryv1.EndpointSlice, deleted bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.slices[key]
	if m == nil {
		m = map[string]int64{}
		t.slices[key] = m
	}
	if deleted {
		m[s.Name] = 0
	} else {
		m[s.Name] = rv(s)
	}
}

// stale reports whether the cached slices miss a write recorded for the
// Service; writes the cache has caught up with are forgotten.
func (t *tracker) stale(key string, cached []*discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.slices[key]
	if len(m) == 0 {
		return false
	}
	have := make(map[string]int64, len(cached))
	for _, s := range cached {
		have[s.Name] = rv(s)
	}
	stale := false
	for name, want := range m {
		got, ok := have[name]
		switch {
		case want == 0 && !ok, want != 0 && ok && got >= want:
			delete(m, name)
		default:
			stale = true
		}
	}
	if len(m) == 0 {
		delete(t.slices, key)
	}
	return stale
}

// gone records that the informer saw the slice deleted: whatever was
// written to it, the cache is now as fresh as it will get.
func (t *tracker) gone(key, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if m := t.slices[key]; m != nil {
		delete(m, name)
		if len(m) == 0 {
			delete(t.slices, key)
		}
	}
}

// forget drops what is recorded for a Service that is gone.
func (t *tracker) forget(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.slices, key)
}
