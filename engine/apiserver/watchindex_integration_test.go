package apiserver_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podtrace/podtrace/engine/enginetest"
)

// TestNodeNameWatchesSeeTheirPods runs the watches kubelets and schedulers
// make (spec.nodeName=N, spec.nodeName=) beside an unselected one while a
// pod is bound to node-a, gracefully deleted and then removed: each sees
// what kube-apiserver sends it, including the pod moving into node-a's
// selection (ADDED) and out of the unscheduled one (DELETED).
func TestNodeNameWatchesSeeTheirPods(t *testing.T) {
	env := enginetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pods := env.Admin().CoreV1().Pods("default")
	list, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	watches := map[string]watch.Interface{}
	for _, sel := range []string{"spec.nodeName=node-a", "spec.nodeName=node-b", "spec.nodeName=", ""} {
		if watches[sel], err = pods.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion, FieldSelector: sel}); err != nil {
			t.Fatalf("%q: %v", sel, err)
		}
		defer watches[sel].Stop()
	}
	if _, err := pods.Create(ctx, pod("p"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-a"}}
	if err := pods.Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "p", metav1.DeleteOptions{}); err != nil { // bound: graceful
		t.Fatal(err)
	}
	zero := int64(0)
	if err := pods.Delete(ctx, "p", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	// One last pod per selection marks the end of each watch's events.
	for _, end := range []struct{ name, node string }{{"end-a", "node-a"}, {"end-b", "node-b"}, {"end", ""}} {
		p := pod(end.name)
		p.Spec.NodeName = end.node
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bindRV := map[string]string{} // each watch's second event's resourceVersion
	for _, tc := range []struct{ sel, end, want string }{
		{"spec.nodeName=node-a", "end-a", "[ADDED p node-a MODIFIED p node-a deleting DELETED p node-a deleting ADDED end-a node-a]"},
		{"spec.nodeName=node-b", "end-b", "[ADDED end-b node-b]"},
		{"spec.nodeName=", "end", "[ADDED p  DELETED p  ADDED end ]"},
		{"", "end", "[ADDED p  MODIFIED p node-a MODIFIED p node-a deleting DELETED p node-a deleting " +
			"ADDED end-a node-a ADDED end-b node-b ADDED end ]"},
	} {
		got, rvs := watchUntil(t, watches[tc.sel], tc.end)
		if got != tc.want {
			t.Errorf("%q saw %s\n want %s", tc.sel, got, tc.want)
		}
		if len(rvs) > 1 {
			bindRV[tc.sel] = rvs[1]
		}
	}
	// The pod leaving the unscheduled selection is the bind's change: its
	// DELETED carries the pod before the bind at the bind's resourceVersion.
	if bindRV["spec.nodeName="] != bindRV[""] {
		t.Errorf("DELETED on leaving at resourceVersion %s, the bind's is %s", bindRV["spec.nodeName="], bindRV[""])
	}
}

// watchUntil describes a watch's events up to the one of pod end, and
// returns their objects' resourceVersions.
func watchUntil(t *testing.T, w watch.Interface, end string) (string, []string) {
	t.Helper()
	var seen, rvs []string
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-w.ResultChan():
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				t.Fatalf("event %s of %T after %v", ev.Type, ev.Object, seen)
			}
			s := fmt.Sprintf("%s %s %s", ev.Type, p.Name, p.Spec.NodeName)
			if p.DeletionTimestamp != nil {
				s += " deleting"
			}
			rvs = append(rvs, p.ResourceVersion)
			if seen = append(seen, s); p.Name == end {
				return fmt.Sprint(seen), rvs
			}
		case <-timeout:
			t.Fatalf("saw %v, then nothing", seen)
		}
	}
}
