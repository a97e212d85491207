package apiserver

import (
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// predicate selects objects by namespace, labels and fields.
type predicate struct {
	namespace string
	label     labels.Selector
	field     fields.Selector
}

// selects tells whether p has a label or field selector (which, unlike the
// namespace, can differ between an object's versions).
func (p predicate) selects() bool {
	return p.label != nil && !p.label.Empty() || p.field != nil && !p.field.Empty()
}

func (p predicate) matches(e *cached) bool {
	if e == nil {
		return false
	}
	if p.namespace != "" && e.ns != p.namespace {
		return false
	}
	if p.label != nil && !p.label.Empty() && !p.label.Matches(e.labels) {
		return false
	}
	if p.field != nil && !p.field.Empty() && !p.field.Matches(e.fields) {
		return false
	}
	return true
}

// maxQueue bounds a watcher's backlog: a client that falls this far behind is
// disconnected and resumes from the last resourceVersion it saw, as
// kube-apiserver does with slow watchers.
const maxQueue = 100000

// queued is one event a watcher has yet to send; a nil ch marks the end of
// the initial events.
type queued struct {
	typ  watch.EventType
	ch   *change
	left bool // the change took the object out of the selection
}

// object returns what q's event carries, and the cache of its encodings:
// the object after the change or, as kube-apiserver sends it when the
// change took the object out of the watcher's selection, the object before
// the change at the change's resourceVersion.
func (q queued) object() (runtime.Object, *encodeCache) {
	if q.left {
		return q.ch.left, &q.ch.leftEnc
	}
	return q.ch.cur.obj, &q.ch.enc
}

// watcher is one API watch served from a cacher.
type watcher struct {
	pred      predicate
	mu        sync.Mutex
	queue     []queued
	wake      chan struct{}
	done      chan struct{}
	once      sync.Once
	initialRV int64
	from      int64    // changes at or before this revision are already in the initial events
	key       watchKey // where the cacher's watchIndex keeps it
}

func newWatcher(p predicate) *watcher {
	return &watcher{pred: p, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// send queues ch as the event this watcher should see: a change that moves
// an object into or out of the selection arrives as ADDED or DELETED. The
// cacher calls it with its mutex held.
func (w *watcher) send(ch *change) {
	if ch.rv <= w.from {
		return
	}
	cur := ch.typ != watch.Deleted && w.pred.matches(ch.cur)
	prev := ch.prev != nil && w.pred.matches(ch.prev)
	var typ watch.EventType
	left := false
	switch {
	case ch.typ == watch.Deleted && prev:
		typ = watch.Deleted
	case cur && prev:
		typ = watch.Modified
	case cur:
		typ = watch.Added
	case prev:
		typ, left = watch.Deleted, true
		ch.leaving()
	default:
		return
	}
	w.mu.Lock()
	if len(w.queue) >= maxQueue {
		w.mu.Unlock()
		w.stop(nil)
		return
	}
	w.queue = append(w.queue, queued{typ: typ, ch: ch, left: left})
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// next returns the queued events, waiting until there are some or the
// watcher stops (then ok is false).
func (w *watcher) next(buf []queued) ([]queued, bool) {
	for {
		w.mu.Lock()
		if len(w.queue) > 0 {
			buf = append(buf[:0], w.queue...)
			w.queue = w.queue[:0]
			w.mu.Unlock()
			return buf, true
		}
		w.mu.Unlock()
		select {
		case <-w.wake:
		case <-w.done:
			return nil, false
		}
	}
}

func (w *watcher) stop(error) { w.once.Do(func() { close(w.done) }) }

// stopWatcher stops w (for watchIndex.each).
func stopWatcher(w *watcher) { w.stop(nil) }

// windowSize is how many recent changes a cacher keeps for watches that
// resume from an older resourceVersion; older ones get 410 Gone.
const windowSize = 10000

// past is one change as the window keeps it: the bytes etcd stored, not the
// decoded object, so the window costs about the encoded size of what it
// remembers. Live watchers get the decoded change directly; only a watch
// resuming from before the newest change decodes these again.
type past struct {
	typ     watch.EventType
	rv      int64
	prevRV  int64   // the revision prev was written at
	key     string  // the etcd key
	cur     []byte  // the stored object after the change; nil for DELETED
	prev    []byte  // the stored object before it; nil for ADDED
	prevObj *cached // the object before it when etcd sent no previous value
}

// window is a ring of the most recent changes, oldest first.
type window struct {
	ring   []past
	start  int            // index of the oldest change once the ring is full
	newest map[string]int // etcd key → index of its newest kept change
}

// add keeps p. When the change before it on the same key is still kept,
// p's previous bytes are that change's (the same revision), so they are
// kept once rather than again as etcd's copy of the previous value.
func (w *window) add(p past) {
	if w.newest == nil {
		w.newest = map[string]int{}
	}
	if i, ok := w.newest[p.key]; ok && p.prev != nil && w.ring[i].rv == p.prevRV && w.ring[i].cur != nil {
		p.prev = w.ring[i].cur
	}
	i := len(w.ring)
	if i < windowSize {
		w.ring = append(w.ring, p)
	} else {
		i = w.start
		if old := w.ring[i].key; w.newest[old] == i {
			delete(w.newest, old)
		}
		w.ring[i] = p
		w.start = (w.start + 1) % windowSize
	}
	if p.typ == watch.Deleted {
		delete(w.newest, p.key)
	} else {
		w.newest[p.key] = i
	}
}

// oldest returns the revision of the oldest change kept, or 0 when empty.
func (w *window) oldest() int64 {
	if len(w.ring) == 0 {
		return 0
	}
	return w.ring[w.start].rv
}

// after calls fn, oldest first, for every kept change newer than rv.
func (w *window) after(rv int64, fn func(*past)) {
	n := len(w.ring)
	for i := 0; i < n; i++ {
		if p := &w.ring[(w.start+i)%n]; p.rv > rv {
			fn(p)
		}
	}
}

// replay queues for w the kept changes after rv, or fails with 410 Gone
// when the window no longer reaches back to rv. c.mu is held.
func (c *cacher) replay(w *watcher, rv int64) error {
	if oldest := c.window.oldest(); oldest > 0 && rv < oldest-1 {
		return apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rv, oldest-1))
	}
	needPrev := w.pred.selects()
	c.window.after(rv, func(past *past) {
		if ch := c.expand(past, needPrev); ch != nil {
			w.send(ch)
		}
	})
	return nil
}

// expand decodes a change the window kept. The object before the change is
// decoded only with needPrev, when a label or field selector must tell
// whether it matched; otherwise it stands in as the current one (the
// namespace, the key's, is the same).
func (c *cacher) expand(pa *past, needPrev bool) *change {
	ch := &change{typ: pa.typ, rv: pa.rv}
	if pa.typ == watch.Deleted && pa.prev == nil {
		last := pa.prevObj.obj.DeepCopyObject()
		setRV(last, pa.rv)
		ch.cur, ch.prev = c.newCached(last), pa.prevObj
		return ch
	}
	raw := pa.cur
	if pa.typ == watch.Deleted {
		raw = pa.prev
	}
	obj, err := c.store.decode(raw, pa.rv)
	if err != nil {
		return nil
	}
	ch.cur = c.newCached(obj)
	switch {
	case pa.typ == watch.Added:
	case pa.typ == watch.Deleted, pa.prev == nil && pa.prevObj == nil:
		ch.prev = ch.cur
	case pa.prevObj != nil:
		ch.prev = pa.prevObj
	case !needPrev:
		ch.prev = ch.cur
	default:
		prev, err := c.store.decode(pa.prev, pa.rv)
		if err != nil {
			return nil
		}
		ch.prev = c.newCached(prev)
	}
	return ch
}
