package main

import (
	"fmt"
	"time"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
	"github.com/podtrace/podtrace/tui"
)

// faultControl lets the UI inject faults and drive breakpoints.
type faultControl struct{ t *trace.Tracer }

// Variants lists the stage's realistic failures from the catalogue, the
// default first.
func (f faultControl) Variants(stage stages.ID) []tui.Variant {
	var out []tui.Variant
	for _, v := range stages.Variants(stage) {
		out = append(out, tui.Variant{Name: v.Name, Description: v.Description})
	}
	return out
}

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

func (f faultControl) SetBreakpoint(bp tui.Breakpoint) error {
	f.t.Breaks.Set(trace.Breakpoint{Stage: bp.Stage, Scope: bp.Scope})
	return nil
}

func (f faultControl) ClearBreakpoint(bp tui.Breakpoint) error {
	f.t.Breaks.Remove(trace.Breakpoint{Stage: bp.Stage, Scope: bp.Scope})
	return nil
}

func (f faultControl) Breakpoints() []tui.Breakpoint {
	var out []tui.Breakpoint
	for _, bp := range f.t.Breaks.List() {
		out = append(out, tui.Breakpoint{Stage: bp.Stage, Scope: bp.Scope})
	}
	return out
}

func (f faultControl) Held() []tui.Held {
	var out []tui.Held
	for _, h := range f.t.Breaks.Held() {
		out = append(out, tui.Held{Pod: h.Pod, Stage: h.Stage})
	}
	return out
}

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

// clockControl lets the UI pause, speed up and fast-forward the engine clock.
type clockControl struct{ e *engine.Engine }

func (c clockControl) Paused() bool   { return c.e.Clock.Paused() }
func (c clockControl) Speed() float64 { return c.e.Clock.Speed() }

func (c clockControl) SetPaused(paused bool) error {
	if paused {
		c.e.Clock.Pause()
	} else {
		c.e.Clock.Resume()
	}
	return nil
}

func (c clockControl) SetSpeed(speed float64) error { return c.e.Clock.SetSpeed(speed) }

func (c clockControl) FastForward() (time.Duration, error) {
	if _, d, ok := c.e.Clock.FastForwardWait(); ok {
		return d, nil
	}
	if d, ok := c.e.Clock.FastForward(); ok {
		return d, nil
	}
	return 0, fmt.Errorf("nothing is waiting on the clock")
}
