package attach

import (
	"time"

	v1 "k8s.io/api/core/v1"
)

// A core/v1 Event says when it happened in one of three ways, by who wrote
// it: the legacy recorder (the kubelet, the controllers) sets
// firstTimestamp, lastTimestamp and count; the events.k8s.io/v1 recorder
// (the scheduler) sets eventTime for the first time and, on repeats,
// series.lastObservedTime and series.count, which the API serves as the
// same core/v1 fields with the legacy ones zero. kubectl reads them as
// below (`kubectl events` sorts by EventTime; `kubectl get events` prints
// LAST SEEN and COUNT the same way).

// EventTime is when the Event last happened, as `kubectl events` orders
// Events: series.lastObservedTime, else lastTimestamp, else eventTime
// (else firstTimestamp; zero when the Event says nothing).
func EventTime(ev *v1.Event) time.Time {
	switch {
	case ev.Series != nil && !ev.Series.LastObservedTime.IsZero():
		return ev.Series.LastObservedTime.Time
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	}
	return ev.FirstTimestamp.Time
}

// EventFirstTime is when the Event first happened, as `kubectl events`
// says "over" it: eventTime, else firstTimestamp.
func EventFirstTime(ev *v1.Event) time.Time {
	if !ev.EventTime.IsZero() {
		return ev.EventTime.Time
	}
	return ev.FirstTimestamp.Time
}

// EventCount is how many times the Event has happened, as kubectl's COUNT:
// series.count, else count, else 1 (a singleton of the new API has none).
func EventCount(ev *v1.Event) int {
	if ev.Series != nil && ev.Series.Count > 0 {
		return int(ev.Series.Count)
	}
	if ev.Count > 0 {
		return int(ev.Count)
	}
	return 1
}
