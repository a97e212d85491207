package apiserver

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// cached is one object as the cache holds it, with what selectors need.
type cached struct {
	key    string
	obj    runtime.Object
	ns     string
	labels labels.Set
	fields fields.Set
}

// change is one etcd event, decoded once and shared by every watcher.
type change struct {
	typ  watch.EventType
	rv   int64
	cur  *cached // the object after the change (its last state for DELETED)
	prev *cached // before the change; nil for ADDED
	enc  encodeCache

	// left is prev at the change's revision, what a watcher whose selection
	// the change leaves gets as DELETED; made by the first such watcher.
	left    runtime.Object
	leftEnc encodeCache
}

// leaving makes ch.left once; the cacher's mutex, held by every caller of
// watcher.send, orders the watchers that need it.
func (ch *change) leaving() {
	if ch.left == nil {
		ch.left = ch.prev.obj.DeepCopyObject()
		setRV(ch.left, ch.rv)
	}
}

// cacher mirrors one resource's etcd prefix in memory through a single etcd
// watch, like kube-apiserver's watch cache: watches are served from it, so
// one etcd watch feeds any number of API watchers, each object is decoded
// once, and each change is encoded once per media type.
type cacher struct {
	res   *Resource
	store *store

	mu       sync.RWMutex
	waiters  []revWaiter // requests waiting for the cache to reach a revision
	objects  map[string]*cached
	rv       int64
	window   window     // recent changes, for watches resuming from an older resourceVersion
	keep     bool       // objects are kept; false for events, served from etcd (see keepsObjects)
	watchers watchIndex // the live watchers, indexed by what they select
	ready    chan struct{}

	watchCtx context.Context // the etcd watch's context, for progress requests
}

// keepsObjects tells whether the cache holds a resource's objects. As with
// kube-apiserver's default --watch-cache-sizes (events: 0), Events are not
// held: there are many, each written once or twice and rarely read, so lists
// and gets of them read etcd. Their watches are still served from the one
// etcd watch the cacher keeps, with the same window of recent changes.
func keepsObjects(res *Resource) bool { return res.GVR.Resource != "events" }

func newCacher(res *Resource, s *store) *cacher {
	c := &cacher{res: res, store: s, objects: map[string]*cached{}, watchers: newWatchIndex(triggerField(res), res.Namespaced),
		keep: keepsObjects(res), ready: make(chan struct{})}
	return c
}

func (c *cacher) newCached(obj runtime.Object) *cached {
	m, _ := meta.Accessor(obj)
	return &cached{key: m.GetNamespace() + "/" + m.GetName(), obj: obj, ns: m.GetNamespace(),
		labels: labels.Set(m.GetLabels()), fields: c.res.objectFields(obj)}
}

// run lists the prefix, then follows it with an etcd watch until ctx ends,
// relisting if the watch is lost.
func (c *cacher) run(ctx context.Context) {
	for ctx.Err() == nil {
		if err := c.listAndWatch(ctx); err != nil && ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
		}
	}
	c.mu.Lock()
	c.watchers.each(stopWatcher)
	c.mu.Unlock()
}

func (c *cacher) listAndWatch(ctx context.Context) error {
	var objs []runtime.Object
	var rev int64
	var err error
	if c.keep {
		objs, rev, err = c.store.list(ctx, "")
	} else {
		var resp *clientv3.GetResponse
		if resp, err = c.store.etcd.Get(ctx, c.res.Prefix(""), clientv3.WithPrefix(), clientv3.WithCountOnly()); err == nil {
			rev = resp.Header.Revision
		}
	}
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.objects = make(map[string]*cached, len(objs))
	for _, o := range objs {
		e := c.newCached(o)
		c.objects[e.key] = e
	}
	if rev > c.rv {
		c.rv = rev
	}
	// Watchers may have missed changes while the etcd watch was down: end
	// them so their clients resume (or relist) from what they last saw.
	c.watchers.each(stopWatcher)
	c.wake()
	c.mu.Unlock()
	select {
	case <-c.ready:
	default:
		close(c.ready)
	}

	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	c.mu.Lock()
	c.watchCtx = wctx
	c.mu.Unlock()
	wch := c.store.etcd.Watch(wctx, c.res.Prefix(""), clientv3.WithPrefix(), clientv3.WithRev(rev+1),
		clientv3.WithPrevKV(), clientv3.WithProgressNotify())
	for resp := range wch {
		if err := resp.Err(); err != nil {
			return err
		}
		if resp.IsProgressNotify() {
			c.mu.Lock()
			c.advance(resp.Header.Revision)
			c.mu.Unlock()
			continue
		}
		for _, ev := range resp.Events {
			c.apply(ev)
		}
	}
	return fmt.Errorf("etcd watch on %s closed", c.res.Prefix(""))
}

// apply folds one etcd event into the cache and hands it to the watchers.
func (c *cacher) apply(ev *clientv3.Event) {
	ch := &change{rv: ev.Kv.ModRevision}
	key := string(ev.Kv.Key)
	p := past{rv: ch.rv, key: key}
	if ev.PrevKv != nil {
		p.prev, p.prevRV = ev.PrevKv.Value, ev.PrevKv.ModRevision
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.keep {
		c.applyUnkept(ev, p)
		return
	}
	if ev.Type == clientv3.EventTypeDelete {
		prev := c.cachedByEtcdKey(key)
		if prev == nil {
			c.advance(ch.rv)
			return
		}
		last := prev.obj.DeepCopyObject()
		setRV(last, ch.rv)
		ch.typ, ch.prev, ch.cur = watch.Deleted, prev, c.newCached(last)
		delete(c.objects, prev.key)
	} else {
		p.cur = ev.Kv.Value
		obj, err := c.store.decode(ev.Kv.Value, ev.Kv.ModRevision)
		if err != nil {
			c.advance(ch.rv)
			return
		}
		cur := c.newCached(obj)
		ch.cur, ch.prev, ch.typ = cur, c.objects[cur.key], watch.Modified
		if ch.prev == nil {
			ch.typ = watch.Added
		}
		c.objects[cur.key] = cur
	}
	p.typ = ch.typ
	switch {
	case ch.prev == nil:
		p.prev = nil
	case p.prev == nil:
		p.prevObj = ch.prev
	}
	c.window.add(p)
	c.advance(ch.rv)
	c.watchers.visit(ch, func(w *watcher) { w.send(ch) })
}

// applyUnkept records a change of a resource whose objects are not kept and,
// when anyone watches, decodes it once for the watchers (the previous
// version only if a watcher's selector needs it). c.mu is held.
func (c *cacher) applyUnkept(ev *clientv3.Event, p past) {
	p.typ = watch.Modified
	switch {
	case ev.Type == clientv3.EventTypeDelete:
		if p.prev == nil { // nothing known was deleted
			c.advance(p.rv)
			return
		}
		p.typ = watch.Deleted
	case p.prev == nil:
		p.typ = watch.Added
	}
	if ev.Type != clientv3.EventTypeDelete {
		p.cur = ev.Kv.Value
	}
	c.window.add(p)
	c.advance(p.rv)
	if c.watchers.len() == 0 {
		return
	}
	if ch := c.expand(&p, c.watchers.anySelects()); ch != nil {
		c.watchers.visit(ch, func(w *watcher) { w.send(ch) })
	}
}

func (c *cacher) advance(rv int64) {
	if rv > c.rv {
		c.rv = rv
		c.wake()
	}
}

// cachedByEtcdKey finds the object stored under an etcd key.
func (c *cacher) cachedByEtcdKey(etcdKey string) *cached {
	rest := etcdKey[len(c.res.Prefix("")):]
	if !c.res.Namespaced {
		rest = "/" + rest
	}
	return c.objects[rest]
}

// waitFresh waits until the cache has seen revision rv, asking etcd for
// progress notifications (which carry the current revision) when nothing on
// this prefix would otherwise move it.
func (c *cacher) waitFresh(ctx context.Context, rv int64) error {
	select {
	case <-c.ready:
	case <-ctx.Done():
		return ctx.Err()
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		c.mu.RLock()
		cur, wctx := c.rv, c.watchCtx
		c.mu.RUnlock()
		if cur >= rv {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", rv, cur), 1)
		}
		if wctx != nil {
			_ = c.store.etcd.RequestProgress(wctx)
		}
		c.waitRev(ctx, rv, 50*time.Millisecond)
	}
}

// waitApplied waits (briefly) until the cache holds revision rv, which a
// write through this server has just produced: once a write returns, every
// read from the cache sees it (read-your-writes for every client).
func (c *cacher) waitApplied(ctx context.Context, rv int64) {
	c.waitRev(ctx, rv, time.Second)
}

// revWaiter is one request waiting for the cache to reach rv.
type revWaiter struct {
	rv int64
	ch chan struct{}
}

// waitRev waits until the cache has seen revision rv, d passes or ctx ends,
// and reports whether the cache got there. Only the waiters whose revision
// is reached are woken, so many concurrent writers cost one wake-up each.
func (c *cacher) waitRev(ctx context.Context, rv int64, d time.Duration) bool {
	c.mu.Lock()
	if c.rv >= rv {
		c.mu.Unlock()
		return true
	}
	w := revWaiter{rv: rv, ch: make(chan struct{})}
	c.waiters = append(c.waiters, w)
	c.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.ch:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.waiters {
		if c.waiters[i].ch == w.ch {
			c.waiters = append(c.waiters[:i], c.waiters[i+1:]...)
			break
		}
	}
	return c.rv >= rv
}

// wake releases the waiters whose revision the cache has reached; c.mu is held.
func (c *cacher) wake() {
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.rv <= c.rv {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	clear(c.waiters[len(kept):])
	c.waiters = kept
}

// list returns the cached objects matching p, sorted by key, and the cache's revision.
func (c *cacher) list(ctx context.Context, p predicate) ([]runtime.Object, int64, error) {
	select {
	case <-c.ready:
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	}
	if !c.keep {
		return c.listStored(ctx, p)
	}
	c.mu.RLock()
	matched := make([]*cached, 0, len(c.objects))
	for _, e := range c.objects {
		if p.matches(e) {
			matched = append(matched, e)
		}
	}
	rv := c.rv
	c.mu.RUnlock()
	sort.Slice(matched, func(i, j int) bool { return matched[i].key < matched[j].key })
	out := make([]runtime.Object, len(matched))
	for i, e := range matched {
		out[i] = e.obj
	}
	return out, rv, nil
}

// listStored lists the objects matching p from etcd, sorted by key.
func (c *cacher) listStored(ctx context.Context, p predicate) ([]runtime.Object, int64, error) {
	objs, rev, err := c.store.list(ctx, p.namespace)
	if err != nil {
		return nil, 0, err
	}
	out := objs[:0]
	for _, o := range objs {
		if p.matches(c.newCached(o)) {
			out = append(out, o)
		}
	}
	return out, rev, nil
}

// get returns the cached object, or nil (always for objects not kept).
func (c *cacher) get(namespace, name string) runtime.Object {
	<-c.ready
	c.mu.RLock()
	defer c.mu.RUnlock()
	if e := c.objects[namespace+"/"+name]; e != nil {
		return e.obj
	}
	return nil
}

// watch registers a watcher for changes after rv. With initial set, it first
// receives ADDED for every matching object and then, with endMarker, a
// BOOKMARK marking the end of the initial events.
func (c *cacher) watch(ctx context.Context, rv int64, initial, endMarker bool, p predicate) (*watcher, error) {
	if !initial && rv > 0 {
		if err := c.waitFresh(ctx, rv); err != nil {
			return nil, err
		}
	}
	<-c.ready
	w := newWatcher(p)
	var stored []runtime.Object
	if initial && !c.keep {
		var err error
		if stored, w.from, err = c.listStored(ctx, p); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case initial && !c.keep:
		// The objects as etcd listed them, then whatever the cache has seen
		// since; changes up to the list's revision are skipped (w.from).
		for _, o := range stored {
			w.queue = append(w.queue, queued{typ: watch.Added, ch: &change{typ: watch.Added, rv: mustRV(o), cur: c.newCached(o)}})
		}
		w.initialRV = w.from
		if endMarker {
			w.queue = append(w.queue, queued{typ: watch.Bookmark})
		}
		if err := c.replay(w, w.from); err != nil {
			return nil, err
		}
	case initial:
		keys := make([]string, 0, len(c.objects))
		for k, e := range c.objects {
			if p.matches(e) {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			w.queue = append(w.queue, queued{typ: watch.Added, ch: &change{typ: watch.Added, rv: mustRV(c.objects[k].obj), cur: c.objects[k]}})
		}
		w.initialRV = c.rv
		if endMarker {
			w.queue = append(w.queue, queued{typ: watch.Bookmark})
		}
	default:
		if err := c.replay(w, rv); err != nil {
			return nil, err
		}
	}
	c.watchers.add(w)
	go func() {
		select {
		case <-ctx.Done():
		case <-w.done:
		}
		c.mu.Lock()
		c.watchers.remove(w)
		c.mu.Unlock()
		w.stop(nil)
	}()
	return w, nil
}

// currentRV returns the newest revision the cache has seen.
func (c *cacher) currentRV() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.rv
}
