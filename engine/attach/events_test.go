package attach

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	_ "k8s.io/kubernetes/pkg/apis/events/install"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// asCoreV1 is ev as the API server serves it from /api/v1: converted by
// the API's own scheme, through the internal Event.
func asCoreV1(t *testing.T, ev *eventsv1.Event) *v1.Event {
	t.Helper()
	var internal api.Event
	if err := legacyscheme.Scheme.Convert(ev, &internal, nil); err != nil {
		t.Fatal(err)
	}
	var out v1.Event
	if err := legacyscheme.Scheme.Convert(&internal, &out, nil); err != nil {
		t.Fatal(err)
	}
	return &out
}

// schedulerEvent is an Event as the scheduler's events.k8s.io/v1
// recorder (client-go tools/events) writes it: eventTime when it first
// happened and, once repeated, a series.
func schedulerEvent(series *eventsv1.EventSeries) *eventsv1.Event {
	return &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "batch.1890a", Namespace: "default"},
		EventTime: metav1.NewMicroTime(t0), Series: series, ReportingController: "default-scheduler",
		ReportingInstance: "default-scheduler-node-0", Action: "Scheduling", Reason: "FailedScheduling",
		Regarding: v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "batch"}, Type: v1.EventTypeWarning,
		Note: "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."}
}

// Each way an Event can say when it happened gives kubectl's LAST SEEN,
// first time and COUNT.
func TestEventTimes(t *testing.T) {
	for _, tc := range []struct {
		name        string
		ev          *v1.Event
		last, first time.Time
		count       int
	}{
		{"events.k8s.io/v1, once: eventTime only", asCoreV1(t, schedulerEvent(nil)), t0, t0, 1},
		{"events.k8s.io/v1, repeated: series", asCoreV1(t, schedulerEvent(&eventsv1.EventSeries{Count: 4,
			LastObservedTime: metav1.NewMicroTime(t0.Add(95 * time.Second))})),
			t0.Add(95 * time.Second), t0, 4},
		{"legacy recorder (kubelet): first and last timestamps, count", &v1.Event{Reason: "BackOff",
			FirstTimestamp: metav1.NewTime(t0), LastTimestamp: metav1.NewTime(t0.Add(3 * time.Minute)), Count: 7,
			Source: v1.EventSource{Component: "kubelet", Host: "node-1"}},
			t0.Add(3 * time.Minute), t0, 7},
		{"nothing said", &v1.Event{Reason: "Odd"}, time.Time{}, time.Time{}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := EventTime(tc.ev); !got.Equal(tc.last) {
				t.Errorf("last seen %v, want %v", got, tc.last)
			}
			if got := EventFirstTime(tc.ev); !got.Equal(tc.first) {
				t.Errorf("first seen %v, want %v", got, tc.first)
			}
			if got := EventCount(tc.ev); got != tc.count {
				t.Errorf("count %d, want %d", got, tc.count)
			}
		})
	}
}

// The API serves an events.k8s.io/v1 Event with no legacy timestamps: the
// test above would prove nothing if the conversion filled them in.
func TestNewAPIEventsHaveNoLegacyTimes(t *testing.T) {
	ev := asCoreV1(t, schedulerEvent(&eventsv1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(t0.Add(time.Minute))}))
	if !ev.LastTimestamp.IsZero() || !ev.FirstTimestamp.IsZero() || ev.Count != 0 || ev.EventTime.IsZero() || ev.Series == nil {
		t.Fatalf("core/v1 view: first %v last %v count %d eventTime %v series %v",
			ev.FirstTimestamp, ev.LastTimestamp, ev.Count, ev.EventTime, ev.Series)
	}
}
