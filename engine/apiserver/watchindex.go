package apiserver

import (
	"k8s.io/apimachinery/pkg/fields"
)

// watchScope narrows a watcher to one namespace and/or one object name, as
// kube-apiserver's cacher scopes watchers (its namespacedName): from the
// request's namespace, else a metadata.namespace=X field selector, and from
// a metadata.name=X field selector (which a watch of one named object has).
type watchScope struct {
	namespace, name string
}

// watchKey is where a watcher sits in a watchIndex: in the bucket of the
// trigger value its field selector requires, when it requires one, else in
// the bucket of its scope.
type watchKey struct {
	scope  watchScope
	value  string // the trigger field's required value, when valued
	valued bool
}

// watcherSet is one bucket of a watchIndex.
type watcherSet map[*watcher]struct{}

// watchIndex holds a cacher's watchers so that a change visits only those
// that may select it, as kube-apiserver's cacher does with its
// indexedWatchers: a watcher whose field selector requires an exact value
// of the resource's trigger field (spec.nodeName for pods, as the pods
// registry's TriggerFunc) is visited only for changes whose object, before
// or after, has that value; every other watcher is visited for the changes
// in its scope. Visiting is only a pre-filter: each visited watcher still
// applies its own predicate to the object before and after the change, so
// the events a watcher gets are the same as when every watcher saw every
// change. It is guarded by the cacher's mutex.
type watchIndex struct {
	trigger string // the indexed field, or "" when the resource has none
	scoped  bool   // namespace scopes apply (the resource is namespaced)
	all     map[watchScope]watcherSet
	byValue map[string]watcherSet
	n       int
	// selecting counts the watchers with a label or field selector, which
	// need a change's previous object to tell ADDED/DELETED from MODIFIED.
	selecting int
}

// triggerField returns the field a resource's watchers are indexed by: as in
// kube-apiserver, only pods have one (spec.nodeName, which every kubelet
// watches its pods by).
func triggerField(res *Resource) string {
	if res.GVR.Group == "" && res.GVR.Resource == "pods" {
		return "spec.nodeName"
	}
	return ""
}

func newWatchIndex(trigger string, namespaced bool) watchIndex {
	return watchIndex{trigger: trigger, scoped: namespaced, all: map[watchScope]watcherSet{}, byValue: map[string]watcherSet{}}
}

// keyFor returns where a watcher with predicate p belongs.
func (x *watchIndex) keyFor(p predicate) watchKey {
	var k watchKey
	if x.trigger != "" {
		if v, ok := exactField(p.field, x.trigger); ok {
			return watchKey{value: v, valued: true}
		}
	}
	if x.scoped {
		k.scope.namespace = p.namespace
		if k.scope.namespace == "" {
			k.scope.namespace, _ = exactField(p.field, "metadata.namespace")
		}
	}
	k.scope.name, _ = exactField(p.field, "metadata.name")
	return k
}

// exactField reports the value sel requires field to equal, if it does.
func exactField(sel fields.Selector, field string) (string, bool) {
	if sel == nil {
		return "", false
	}
	return sel.RequiresExactMatch(field)
}

// add indexes w by its predicate.
func (x *watchIndex) add(w *watcher) {
	w.key = x.keyFor(w.pred)
	set := x.bucket(w.key)
	if set == nil {
		set = watcherSet{}
		if w.key.valued {
			x.byValue[w.key.value] = set
		} else {
			x.all[w.key.scope] = set
		}
	}
	if _, ok := set[w]; !ok {
		set[w] = struct{}{}
		if w.pred.selects() {
			x.selecting++
		}
		x.n++
	}
}

// remove drops w, and its bucket once empty.
func (x *watchIndex) remove(w *watcher) {
	set := x.bucket(w.key)
	if _, ok := set[w]; !ok {
		return
	}
	delete(set, w)
	x.n--
	if w.pred.selects() {
		x.selecting--
	}
	if len(set) > 0 {
		return
	}
	if w.key.valued {
		delete(x.byValue, w.key.value)
	} else {
		delete(x.all, w.key.scope)
	}
}

func (x *watchIndex) bucket(k watchKey) watcherSet {
	if k.valued {
		return x.byValue[k.value]
	}
	return x.all[k.scope]
}

// anySelects reports whether some watcher has a label or field selector.
func (x *watchIndex) anySelects() bool { return x.selecting > 0 }

// len returns how many watchers are indexed.
func (x *watchIndex) len() int { return x.n }

// each calls fn for every watcher.
func (x *watchIndex) each(fn func(*watcher)) {
	for _, set := range x.all {
		for w := range set {
			fn(w)
		}
	}
	for _, set := range x.byValue {
		for w := range set {
			fn(w)
		}
	}
}

// visit calls fn, once each, for the watchers that may select ch: those
// scoped to its object's namespace and/or name or unscoped, and those
// whose trigger value the object has before or after the change.
func (x *watchIndex) visit(ch *change, fn func(*watcher)) {
	ns, name := ch.cur.ns, ch.cur.fields["metadata.name"]
	if !x.scoped {
		ns = ""
	}
	if ns != "" {
		if name != "" {
			x.visitSet(x.all[watchScope{namespace: ns, name: name}], fn)
		}
		x.visitSet(x.all[watchScope{namespace: ns}], fn)
	}
	if name != "" {
		x.visitSet(x.all[watchScope{name: name}], fn)
	}
	x.visitSet(x.all[watchScope{}], fn)
	if x.trigger == "" {
		return
	}
	cur := ch.cur.fields[x.trigger]
	x.visitSet(x.byValue[cur], fn)
	if ch.prev != nil {
		if prev := ch.prev.fields[x.trigger]; prev != cur {
			x.visitSet(x.byValue[prev], fn)
		}
	}
}

func (x *watchIndex) visitSet(set watcherSet, fn func(*watcher)) {
	for w := range set {
		fn(w)
	}
}
