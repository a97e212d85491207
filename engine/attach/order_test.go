package attach

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/podtrace/podtrace/stages"
)

// TestLateEventKeepsTheFactsOrder: on a busy machine the scheduler's
// Scheduled Event carries a later second than the kubelet's
// status.startTime. Its bind replaces the status-derived one (its words)
// but keeps the binding's second, so the lane reads bind before kubelet.
func TestLateEventKeepsTheFactsOrder(t *testing.T) {
	var got []stages.Event
	w, err := New(Config{Client: fake.NewClientset(), Emitter: stages.EmitterFunc(func(e stages.Event) { got = append(got, e) })})
	if err != nil {
		t.Fatal(err)
	}
	bound := metav1.NewTime(time.Date(2026, 11, 29, 2, 0, 5, 0, time.UTC))
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default", UID: "u1", CreationTimestamp: bound},
		Spec:       v1.PodSpec{NodeName: "node-1"},
		Status: v1.PodStatus{StartTime: &bound, Conditions: []v1.PodCondition{
			{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: bound}}},
	}
	late := metav1.NewTime(bound.Add(1200 * time.Millisecond))
	scheduled := &v1.Event{InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-1", UID: "u1"},
		Reason: "Scheduled", Message: "Successfully assigned default/web-1 to node-1", Type: v1.EventTypeNormal,
		Source: v1.EventSource{Component: "default-scheduler"}, FirstTimestamp: late, LastTimestamp: late, Count: 1}
	for _, eventFirst := range []bool{false, true} {
		got = nil
		w.emitted = map[types.UID]map[string]bool{}
		if eventFirst {
			w.add(pod.UID, true, eventItems(scheduled))
		}
		w.add(pod.UID, false, podItems(pod))
		if !eventFirst {
			w.add(pod.UID, true, eventItems(scheduled))
		}
		w.Flush(time.Now().Add(time.Hour))
		var order []stages.ID
		var bind stages.Event
		for _, e := range got {
			order = append(order, e.Stage)
			if e.Stage == stages.Bind {
				bind = e
			}
		}
		if want := []stages.ID{stages.Persist, stages.Schedule, stages.Bind, stages.Kubelet}; !slices.Equal(order, want) {
			t.Errorf("event first %v: order %v, want %v", eventFirst, order, want)
		}
		if bind.Reason != "Scheduled" || bind.Message != scheduled.Message || !bind.Time.Equal(bound.Time) {
			t.Errorf("event first %v: bind %+v, want the Event's words at the binding's time %s", eventFirst, bind, bound)
		}
	}
}
