package apiserver

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/watch"
)

// TestWindowSharesPreviousBytes checks the window's bookkeeping over
// wrap-around: a change keeps its predecessor's bytes (not etcd's copy)
// when that predecessor is kept, oldest() follows the ring, and the index
// of newest changes per key stays bounded.
func TestWindowSharesPreviousBytes(t *testing.T) {
	var w window
	last := map[string][]byte{}
	lastRV := map[string]int64{}
	for rv := int64(1); rv <= 3*windowSize; rv++ {
		key := fmt.Sprintf("k%d", rv%7)
		cur := []byte(fmt.Sprintf("v%d", rv))
		p := past{typ: watch.Added, rv: rv, key: key, cur: cur}
		if prev, ok := last[key]; ok {
			p.typ, p.prev, p.prevRV = watch.Modified, append([]byte(nil), prev...), lastRV[key] // etcd's own copy
		}
		w.add(p)
		last[key], lastRV[key] = cur, rv
	}
	if got, want := w.oldest(), int64(2*windowSize+1); got != want {
		t.Fatalf("oldest %d, want %d", got, want)
	}
	if len(w.newest) != 7 {
		t.Errorf("newest indexes %d keys, want 7", len(w.newest))
	}
	shared := 0
	w.after(0, func(p *past) {
		if p.prev != nil && string(p.prev) != fmt.Sprintf("v%d", p.prevRV) {
			t.Fatalf("change %d: previous bytes %q, want v%d", p.rv, p.prev, p.prevRV)
		}
		if p.prev != nil && &p.prev[0] == &w.ring[(int(p.prevRV)-1)%windowSize].cur[0] {
			shared++
		}
	})
	if shared < windowSize-7 {
		t.Errorf("%d changes share their predecessor's bytes, want all but the first per key", shared)
	}
}
