package servicealloc

import (
	"errors"
	"math/rand/v2"
)

// errFull and errAllocated are the allocators' errors, worded as upstream's
// ipallocator and portallocator word them.
var (
	errFull          = errors.New("range is full")
	errIPAllocated   = errors.New("provided IP is already allocated")
	errPortAllocated = errors.New("provided port is already allocated")
)

// bitmap hands out the offsets 0..size-1 of a range, as upstream's
// allocation map with offset does: dynamic allocations start at a random
// point of the upper band [offset, size) and fall back to the lower band,
// which stays free for static (user-chosen) values as long as possible.
type bitmap struct {
	size   int
	offset int
	used   []uint64
	count  int
	rand   *rand.Rand
}

func newBitmap(size, offset int, r *rand.Rand) *bitmap {
	return &bitmap{size: size, offset: offset, used: make([]uint64, (size+63)/64), rand: r}
}

// rangeOffset is upstream's calculateRangeOffset: min(max(lo, size/step), hi),
// zero for ranges of at most lo values.
func rangeOffset(size, lo, hi, step int) int {
	if size <= lo {
		return 0
	}
	return min(max(size/step, lo), hi)
}

func (b *bitmap) has(i int) bool { return b.used[i/64]&(1<<(i%64)) != 0 }

// set marks i used and reports whether it was free.
func (b *bitmap) set(i int) bool {
	if b.has(i) {
		return false
	}
	b.used[i/64] |= 1 << (i % 64)
	b.count++
	return true
}

func (b *bitmap) release(i int) {
	if i < 0 || i >= b.size || !b.has(i) {
		return
	}
	b.used[i/64] &^= 1 << (i % 64)
	b.count--
}

// next allocates a free offset, upper band first.
func (b *bitmap) next() (int, error) {
	if b.count >= b.size {
		return 0, errFull
	}
	if i, ok := b.scan(b.offset, b.size); ok {
		return i, nil
	}
	if i, ok := b.scan(0, b.offset); ok {
		return i, nil
	}
	return 0, errFull
}

// scan looks for a free offset in [lo, hi) from a random start, wrapping.
func (b *bitmap) scan(lo, hi int) (int, bool) {
	n := hi - lo
	if n <= 0 {
		return 0, false
	}
	start := b.rand.IntN(n)
	for k := 0; k < n; k++ {
		i := lo + (start+k)%n
		if b.set(i) {
			return i, true
		}
	}
	return 0, false
}
