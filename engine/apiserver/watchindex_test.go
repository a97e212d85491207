package apiserver

import (
	"fmt"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
)

func resourceNamed(t *testing.T, name string) *Resource {
	t.Helper()
	for _, r := range Resources() {
		if r.GVR.Resource == name {
			return r
		}
	}
	t.Fatalf("no resource %s", name)
	return nil
}

func mustPredicate(t *testing.T, ns, label, field string) predicate {
	t.Helper()
	p := predicate{namespace: ns}
	var err error
	if p.label, err = labels.Parse(label); err != nil {
		t.Fatal(err)
	}
	if p.field, err = fields.ParseSelector(field); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWatchIndexKeys(t *testing.T) {
	pods, nodes := resourceNamed(t, "pods"), resourceNamed(t, "nodes")
	for _, tc := range []struct {
		res          *Resource
		ns, selector string
		want         watchKey
	}{
		{pods, "", "", watchKey{}},
		{pods, "", "spec.nodeName=a", watchKey{value: "a", valued: true}},
		{pods, "default", "spec.nodeName=a", watchKey{value: "a", valued: true}},
		{pods, "", "spec.nodeName=", watchKey{value: "", valued: true}},
		{pods, "", "spec.nodeName==a,status.phase!=Failed", watchKey{value: "a", valued: true}},
		{pods, "", "spec.nodeName!=a", watchKey{}},
		{pods, "", "status.phase=Running", watchKey{}},
		{pods, "default", "", watchKey{scope: watchScope{namespace: "default"}}},
		{pods, "", "metadata.namespace=kube-system", watchKey{scope: watchScope{namespace: "kube-system"}}},
		{pods, "default", "metadata.name=web", watchKey{scope: watchScope{namespace: "default", name: "web"}}},
		{nodes, "", "metadata.name=n1", watchKey{scope: watchScope{name: "n1"}}},
		{nodes, "", "spec.unschedulable=false", watchKey{}},
	} {
		x := newWatchIndex(triggerField(tc.res), tc.res.Namespaced)
		if got := x.keyFor(mustPredicate(t, tc.ns, "", tc.selector)); got != tc.want {
			t.Errorf("%s %q %q: key %+v, want %+v", tc.res.GVR.Resource, tc.ns, tc.selector, got, tc.want)
		}
	}
}

func TestWatchIndexAddRemove(t *testing.T) {
	x := newWatchIndex("spec.nodeName", true)
	a1 := newWatcher(mustPredicate(t, "", "", "spec.nodeName=a"))
	a2 := newWatcher(mustPredicate(t, "", "", "spec.nodeName=a"))
	all := newWatcher(mustPredicate(t, "", "", ""))
	for _, w := range []*watcher{a1, a2, all, a1} { // a1 twice: counted once
		x.add(w)
	}
	if x.len() != 3 || len(x.byValue["a"]) != 2 || len(x.all[watchScope{}]) != 1 {
		t.Fatalf("after adds: len %d, buckets %v / %v", x.len(), x.byValue, x.all)
	}
	x.remove(a1)
	x.remove(a1)
	if x.len() != 2 || len(x.byValue["a"]) != 1 {
		t.Fatalf("after removing a1: len %d, bucket a %v", x.len(), x.byValue["a"])
	}
	if !x.anySelects() {
		t.Fatal("a2 selects by field, but the index says no watcher selects")
	}
	x.remove(a2)
	if x.anySelects() {
		t.Fatal("only an unselected watcher is left, but the index says some selects")
	}
	x.remove(all)
	if x.len() != 0 || len(x.byValue) != 0 || len(x.all) != 0 {
		t.Fatalf("after removing all: len %d, buckets %v / %v", x.len(), x.byValue, x.all)
	}
	n := 0
	x.each(func(*watcher) { n++ })
	if n != 0 {
		t.Fatalf("each visited %d watchers of an empty index", n)
	}
}

// podChange builds the change from prev to cur (either nil for ADDED/DELETED).
func podChange(c *cacher, typ watch.EventType, rv int64, ns, name, prevNode, curNode string) *change {
	mk := func(node string) *cached {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, ResourceVersion: fmt.Sprint(rv)},
			Spec: corev1.PodSpec{NodeName: node}}
		return c.newCached(p)
	}
	ch := &change{typ: typ, rv: rv, cur: mk(curNode)}
	if typ != watch.Added {
		ch.prev = mk(prevNode)
	}
	return ch
}

// TestWatchIndexVisits checks which watchers a pod change visits, and that
// the events they queue are those every watcher would queue if it saw
// every change: the index only skips watchers that would drop the change.
func TestWatchIndexVisits(t *testing.T) {
	c := newCacher(resourceNamed(t, "pods"), nil)
	preds := map[string]predicate{
		"node-a":        mustPredicate(t, "", "", "spec.nodeName=a"),
		"node-b":        mustPredicate(t, "", "", "spec.nodeName=b"),
		"unscheduled":   mustPredicate(t, "", "", "spec.nodeName="),
		"default/a":     mustPredicate(t, "default", "", "spec.nodeName=a"),
		"all":           mustPredicate(t, "", "", ""),
		"not-a":         mustPredicate(t, "", "", "spec.nodeName!=a"),
		"labelled":      mustPredicate(t, "", "app=web", ""),
		"ns-default":    mustPredicate(t, "default", "", ""),
		"ns-other":      mustPredicate(t, "other", "", ""),
		"name-p":        mustPredicate(t, "default", "", "metadata.name=p"),
		"name-p-any-ns": mustPredicate(t, "", "", "metadata.name=p"),
	}
	indexed, every := map[string]*watcher{}, map[string]*watcher{}
	for name, p := range preds {
		indexed[name], every[name] = newWatcher(p), newWatcher(p)
		c.watchers.add(indexed[name])
	}
	unscoped := []string{"all", "not-a", "labelled"}
	for _, tc := range []struct {
		name string
		ch   *change
		want []string // visited, besides the unscoped ones
	}{
		{"created unscheduled", podChange(c, watch.Added, 2, "default", "p", "", ""),
			[]string{"unscheduled", "ns-default", "name-p", "name-p-any-ns"}},
		{"bound to a", podChange(c, watch.Modified, 3, "default", "p", "", "a"),
			[]string{"node-a", "default/a", "unscheduled", "ns-default", "name-p", "name-p-any-ns"}},
		{"updated on a", podChange(c, watch.Modified, 4, "default", "p", "a", "a"),
			[]string{"node-a", "default/a", "ns-default", "name-p", "name-p-any-ns"}},
		{"moved a to b", podChange(c, watch.Modified, 5, "default", "p", "a", "b"),
			[]string{"node-a", "default/a", "node-b", "ns-default", "name-p", "name-p-any-ns"}},
		{"deleted on b", podChange(c, watch.Deleted, 6, "default", "p", "b", "b"),
			[]string{"node-b", "ns-default", "name-p", "name-p-any-ns"}},
		{"other namespace on a", podChange(c, watch.Added, 7, "other", "q", "", "a"),
			[]string{"node-a", "default/a", "ns-other"}},
		{"other pod named p", podChange(c, watch.Added, 8, "other", "p", "", "c"),
			[]string{"ns-other", "name-p-any-ns"}},
	} {
		var got []string
		c.watchers.visit(tc.ch, func(w *watcher) {
			for name, iw := range indexed {
				if iw == w {
					got = append(got, name)
				}
			}
			w.send(tc.ch)
		})
		for _, w := range every {
			w.send(tc.ch)
		}
		want := append(append([]string(nil), unscoped...), tc.want...)
		sort.Strings(got)
		sort.Strings(want)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: visited %v, want %v", tc.name, got, want)
		}
	}
	for name := range preds {
		if got, want := queuedEvents(indexed[name]), queuedEvents(every[name]); got != want {
			t.Errorf("%s: indexed dispatch queued %s, dispatch to every watcher %s", name, got, want)
		}
	}
	if got := queuedEvents(indexed["node-a"]); got != "[ADDED@3 MODIFIED@4 DELETED@5 ADDED@7]" {
		t.Errorf("node-a queued %s", got)
	}
	if got := queuedEvents(indexed["unscheduled"]); got != "[ADDED@2 DELETED@3]" {
		t.Errorf("unscheduled queued %s", got)
	}
}

func queuedEvents(w *watcher) string {
	var out []string
	for _, q := range w.queue {
		out = append(out, fmt.Sprintf("%s@%d", q.typ, q.ch.rv))
	}
	return fmt.Sprint(out)
}
