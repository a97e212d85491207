package kubelet

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"
)

// TestEventHubWritesEachEventAsItsKubelet shares broadcasters between
// kubelets and checks that every event is written through its own
// kubelet's client, with that kubelet's source, and that repeats are still
// counted per kubelet.
func TestEventHubWritesEachEventAsItsKubelet(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hub := NewEventHub(ctx, clock.RealClock{}, 2)
	nodes := []string{"n1", "n2", "n3"}
	clients := map[string]*fake.Clientset{}
	for _, n := range nodes {
		clients[n] = fake.NewClientset()
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-" + n, Namespace: "default", UID: types.UID("u-" + n)}}
		r := hub.Recorder(n, clients[n])
		r.Event(pod, v1.EventTypeNormal, "Pulled", "Container image \"nginx\" already present on machine")
		r.Event(pod, v1.EventTypeNormal, "Pulled", "Container image \"nginx\" already present on machine")
	}
	for _, n := range nodes {
		var events []v1.Event
		deadline := time.Now().Add(10 * time.Second)
		for {
			list, err := clients[n].CoreV1().Events("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			events = list.Items
			if len(events) == 1 && events[0].Count == 2 || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if len(events) != 1 {
			t.Fatalf("%s's client wrote %d events, want 1 (counted twice)", n, len(events))
		}
		e := events[0]
		if e.Source != (v1.EventSource{Component: Component, Host: n}) || e.InvolvedObject.Name != "p-"+n || e.Count != 2 {
			t.Errorf("%s's client wrote source %+v object %s count %d", n, e.Source, e.InvolvedObject.Name, e.Count)
		}
	}
	if len(hub.last.sinks.byHost) != 1 {
		t.Errorf("third kubelet shares a broadcaster with %d kubelets, want its own", len(hub.last.sinks.byHost))
	}
}
