package apiserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/podtrace/podtrace/engine/enginetest"
)

// TestWatchResumesFromWindow resumes watches from a resourceVersion several
// changes old: the cache replays them from the stored bytes it kept, as
// ADDED/MODIFIED/DELETED relative to each watch's selector.
func TestWatchResumesFromWindow(t *testing.T) {
	env := enginetest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pods := env.Admin().CoreV1().Pods("default")
	a := pod("a")
	a.Labels = map[string]string{"tier": "web"}
	a, err := pods.Create(ctx, a, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	from := a.ResourceVersion
	b := pod("b")
	b.Labels = map[string]string{"tier": "web"}
	if b, err = pods.Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	a.Labels["tier"] = "db"
	if a, err = pods.Update(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	type seen struct{ typ, name, tier string }
	for _, tc := range []struct {
		selector string
		want     []seen
	}{
		{"", []seen{{"ADDED", "b", "web"}, {"MODIFIED", "a", "db"}, {"DELETED", "b", "web"}}},
		{"tier=web", []seen{{"ADDED", "b", "web"}, {"DELETED", "a", "web"}, {"DELETED", "b", "web"}}},
		{"tier=db", []seen{{"ADDED", "a", "db"}}},
	} {
		w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: from, LabelSelector: tc.selector})
		if err != nil {
			t.Fatalf("%q: %v", tc.selector, err)
		}
		var got []seen
		timeout := time.After(10 * time.Second)
		for len(got) < len(tc.want) {
			select {
			case ev := <-w.ResultChan():
				if ev.Type == watch.Error {
					t.Fatalf("%q: %v", tc.selector, ev.Object)
				}
				m, _ := ev.Object.(metav1.Object)
				got = append(got, seen{string(ev.Type), m.GetName(), m.GetLabels()["tier"]})
				if m.GetName() == "a" && ev.Type != watch.Added && m.GetResourceVersion() != a.ResourceVersion {
					t.Errorf("%q: a at resourceVersion %s, want %s", tc.selector, m.GetResourceVersion(), a.ResourceVersion)
				}
			case <-timeout:
				t.Fatalf("%q: saw %v, want %v", tc.selector, got, tc.want)
			}
		}
		w.Stop()
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("%q: saw %v, want %v", tc.selector, got, tc.want)
			}
		}
	}
}

// TestEventsServedFromEtcd covers Events, which the watch cache does not
// hold (as kube-apiserver's default): lists and gets read etcd, and watches
// (initial events, then changes) and informers still work.
func TestEventsServedFromEtcd(t *testing.T) {
	env := enginetest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := env.Admin().CoreV1().Events("default")
	mk := func(name string) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Reason: "Pulled", Type: "Normal",
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "p"}, Count: 1}
	}
	if _, err := events.Create(ctx, mk("e1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := events.Watch(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	factory := informers.NewSharedInformerFactory(env.Admin(), 0)
	inf := factory.Core().V1().Events().Informer()
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer never synced")
	}
	if _, ok, _ := inf.GetStore().GetByKey("default/e1"); !ok {
		t.Error("informer's initial list lacks e1")
	}
	if _, err := events.Create(ctx, mk("e2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e1, err := events.Get(ctx, "e1", metav1.GetOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	e1.Count = 2
	if _, err := events.Update(ctx, e1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := events.Delete(ctx, "e2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"ADDED e1", "ADDED e2", "MODIFIED e1", "DELETED e2"}
	var got []string
	timeout := time.After(10 * time.Second)
	for len(got) < len(want) {
		select {
		case ev := <-w.ResultChan():
			got = append(got, string(ev.Type)+" "+ev.Object.(*corev1.Event).Name)
		case <-timeout:
			t.Fatalf("watch saw %v, want %v", got, want)
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("watch saw %v, want %v", got, want)
	}
	list, err := events.List(ctx, metav1.ListOptions{ResourceVersion: "0", FieldSelector: "reason=Pulled"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Count != 2 {
		t.Fatalf("list from etcd: %v %v", list, err)
	}
	enginetest.WaitFor(t, 5*time.Second, "informer to see e2 come and go and e1 counted twice", func() bool {
		_, e2, _ := inf.GetStore().GetByKey("default/e2")
		o, _, _ := inf.GetStore().GetByKey("default/e1")
		return !e2 && o != nil && o.(*corev1.Event).Count == 2
	})
}
