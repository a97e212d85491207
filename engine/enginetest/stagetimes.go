package enginetest

import (
	"fmt"
	"time"

	"github.com/podtrace/podtrace/stages"
)

// Timed is one stage's first start and first end.
type Timed struct{ Start, End time.Time }

// Duration is the stage's length, in milliseconds.
func (t Timed) Duration() float64 { return ms(t.End.Sub(t.Start)) }

// StageTimes folds events into each stage's first start and end, for one pod.
func StageTimes(evs []stages.Event, ns, pod string) map[stages.ID]Timed {
	out := map[stages.ID]Timed{}
	for _, e := range evs {
		if e.Namespace != ns || e.Pod != pod || (e.Kind != "" && e.Kind != stages.KindPod) {
			continue
		}
		t := out[e.Stage]
		switch {
		case e.Status == stages.Started && t.Start.IsZero():
			t.Start = e.Time
		case e.Status.Terminal() && t.End.IsZero():
			t.End = e.Time
		}
		out[e.Stage] = t
	}
	return out
}

// Disagreement says how a stage rebuilt from spans differs from the seams'
// own by more than within at its start or its end (or is missing from
// either), and is "" when they agree.
func Disagreement(spans, seams Timed, within time.Duration) string {
	for _, at := range []struct {
		what       string
		span, seam time.Time
	}{{"start", spans.Start, seams.Start}, {"end", spans.End, seams.End}} {
		if at.span.IsZero() || at.seam.IsZero() || at.span.Sub(at.seam).Abs() > within {
			return fmt.Sprintf("%s: spans %s, seams %s: want within %s", at.what,
				at.span.Format(time.StampMicro), at.seam.Format(time.StampMicro), within)
		}
	}
	return ""
}

// Compared is one line comparing a stage from spans with the seams': both
// lengths, and how far the spans' start and end are from the seams'.
func Compared(spans, seams Timed) string {
	if spans.Start.IsZero() || seams.Start.IsZero() {
		return fmt.Sprintf("spans %9.3fms seams %9.3fms (not in both)", spans.Duration(), seams.Duration())
	}
	return fmt.Sprintf("spans %9.3fms seams %9.3fms (start %+.3fms, end %+.3fms)", spans.Duration(), seams.Duration(),
		ms(spans.Start.Sub(seams.Start)), ms(spans.End.Sub(seams.End)))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
