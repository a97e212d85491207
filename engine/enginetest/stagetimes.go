package enginetest

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
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

// Inside reports how a stage rebuilt from a server's span (the binding
// request) is not inside the client's own stage (the scheduler's bind),
// which must hold on any machine: the request starts after the client
// began and ends before the client has its answer. "" when it is inside.
func Inside(spans, seams Timed) string {
	if spans.Start.IsZero() || seams.Start.IsZero() || spans.Start.Before(seams.Start) || spans.End.After(seams.End) {
		return fmt.Sprintf("the span %s..%s is not inside the seams' stage %s..%s", spans.Start.Format(time.StampMicro),
			spans.End.Format(time.StampMicro), seams.Start.Format(time.StampMicro), seams.End.Format(time.StampMicro))
	}
	return ""
}

// CheckBind checks that pod's binding request (spans, kube-apiserver's
// span of POST pods/binding) lies inside the scheduler's bind stage
// (seams), and logs how far apart their ends are when more than within.
// They agree to milliseconds on a machine with CPU to spare, but the
// request's way back to the scheduler is a goroutine waiting for a CPU:
// on 2 busy cores it once took 19 ms with the load average under 2, so
// the distance is measured (docs/tracing.md), not asserted.
func CheckBind(t testing.TB, pod string, spans, seams Timed, within time.Duration) {
	t.Helper()
	if d := Inside(spans, seams); d != "" {
		t.Errorf("pod %s bind: %s", pod, d)
	}
	if d := Disagreement(spans, seams, within); d != "" {
		t.Logf("pod %s bind %s (%s)", pod, d, Overloaded())
	}
}

// Tolerance is how close a stage rebuilt from spans must come to the
// seams' at both ends: quiet on a machine with CPU to spare, busy when it
// is Overloaded (and the test logs why). A span's end is taken by one
// goroutine and the seam's by another, and on 2 busy cores the later one
// may wait tens of milliseconds for a CPU.
func Tolerance(t testing.TB, quiet, busy time.Duration) time.Duration {
	t.Helper()
	if why := Overloaded(); why != "" {
		t.Logf("stages compared within %s: %s", busy, why)
		return busy
	}
	return quiet
}

// Overloaded says why the machine is too busy for a client's and a
// server's timing of one request to agree to milliseconds (more runnable
// work than CPUs over the last minute, /proc/loadavg), "" when it is not or
// when the load is not known.
func Overloaded() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	load, err := strconv.ParseFloat(f[0], 64)
	if err != nil || load < float64(runtime.NumCPU()) {
		return ""
	}
	return fmt.Sprintf("load average %.2f on %d CPUs", load, runtime.NumCPU())
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
