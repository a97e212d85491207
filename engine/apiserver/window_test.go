package apiserver_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

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
		{"tier=web", []seen{{"ADDED", "b", "web"}, {"DELETED", "a", "db"}, {"DELETED", "b", "web"}}},
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
