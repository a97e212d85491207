package live

import (
	"fmt"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

// faultControl lets the UI inject faults and drive breakpoints.
type faultControl struct{ t *trace.Tracer }

// Variants lists the stage's realistic failures from the catalogue, the
// default first.
func (f faultControl) Variants(stage stages.ID) []stages.Variant { return stages.Variants(stage) }

// Add injects fault, after turning a variant that stands for a slow or down
// component into its delay or hang.
func (f faultControl) Add(fault stages.Fault) (stages.Fault, error) {
	fault, err := stages.ResolveVariant(fault)
	if err != nil {
		return stages.Fault{}, err
	}
	return f.t.Faults.Add(fault), nil
}

func (f faultControl) Remove(id int) error {
	if !f.t.Faults.Remove(id) {
		return fmt.Errorf("no fault %d", id)
	}
	return nil
}

func (f faultControl) List() []stages.Fault { return f.t.Faults.List() }

func (f faultControl) SetBreakpoint(bp stages.Breakpoint) error {
	f.t.Breaks.Set(bp)
	return nil
}

func (f faultControl) ClearBreakpoint(bp stages.Breakpoint) error {
	f.t.Breaks.Remove(bp)
	return nil
}

func (f faultControl) Breakpoints() []stages.Breakpoint { return f.t.Breaks.List() }

func (f faultControl) Held() []stages.Held { return f.t.Breaks.Held() }

func (f faultControl) Step(pod string) error { return release(pod, f.t.Breaks.Step, f.t) }

func (f faultControl) Continue(pod string) error {
	if pod == "" {
		f.t.Breaks.ContinueAll()
		return nil
	}
	return release(pod, f.t.Breaks.Continue, f.t)
}

func release(pod string, do func(string) bool, t *trace.Tracer) error {
	if !do(pod) {
		return fmt.Errorf("pod %s is not held at a breakpoint", pod)
	}
	return nil
}

// paceControl gives the UI's pause, speed and fast-forward keys their
// meaning on a live cluster.
type paceControl struct{ e *engine.Engine }

// Paused reports whether the gates are paused.
func (c paceControl) Paused() bool { return c.e.Tracer.Paused() }

// Speed is the simulated runtime's speed.
func (c paceControl) Speed() float64 { return c.e.Speed() }

// SetPaused pauses every gate (admission, scheduling, the CRI calls):
// each pod stops before its next stage, shown waiting as Paused, while
// the components run on.
func (c paceControl) SetPaused(paused bool) error {
	if paused {
		c.e.Tracer.Pause()
	} else {
		c.e.Tracer.Resume()
	}
	return nil
}

// SetSpeed scales the simulated runtime's latency model from its next wait
// on (2 = twice as fast); the components run on real time.
func (c paceControl) SetSpeed(speed float64) error { return c.e.SetSpeed(speed) }

// RealTime is true: the components run on real time whatever the keys do,
// and the events are stamped on it.
func (c paceControl) RealTime() bool { return true }

// plural is "1 thing" or "n things".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
