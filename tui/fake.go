package tui

import (
	"errors"

	"github.com/podtrace/podtrace/stages"
)

// errNotFaked is returned by fakes whose function field is nil.
var errNotFaked = errors.New("not available in this fake")

// FakeSource is a Source built from function fields, for tests and demos. A
// nil field makes the call return the zero value or an error.
type FakeSource struct {
	SourceName    string
	C             chan stages.Event
	StatusFunc    func() Status
	WorkloadList  []Workload
	ApplyFunc     func(manifest []byte) error
	DeletePodFunc func(ns, name string) error
	ScaleFunc     func(ns, kind, name string, replicas int) error
	PodDetailFunc func(ns, name string) (PodDetail, error)
	FaultControl  FaultControl
	ClockControl  ClockControl
	// K delivers Kubernetes Events (nil: none).
	K chan K8sEvent
	// Scenario is the workshop scenario shown (nil: none); Met says how its
	// goal holds ("" while it does not).
	Scenario *Lesson
	Met      string
}

// Lesson returns Scenario.
func (f *FakeSource) Lesson() *Lesson { return f.Scenario }

// GoalMet returns Met.
func (f *FakeSource) GoalMet() string { return f.Met }

var (
	_ Source          = (*FakeSource)(nil)
	_ KubeEventSource = (*FakeSource)(nil)
	_ LessonSource    = (*FakeSource)(nil)
)

// KubeEvents returns K.
func (f *FakeSource) KubeEvents() <-chan K8sEvent {
	if f.K == nil {
		return nil // a nil channel of the right type, not a nil interface
	}
	return f.K
}

// Name returns SourceName ("fake" when empty).
func (f *FakeSource) Name() string {
	if f.SourceName == "" {
		return "fake"
	}
	return f.SourceName
}

// Events returns C.
func (f *FakeSource) Events() <-chan stages.Event { return f.C }

// Status calls StatusFunc.
func (f *FakeSource) Status() Status {
	if f.StatusFunc == nil {
		return Status{}
	}
	return f.StatusFunc()
}

// Workloads returns WorkloadList.
func (f *FakeSource) Workloads() []Workload { return f.WorkloadList }

// Apply calls ApplyFunc.
func (f *FakeSource) Apply(m []byte) error {
	if f.ApplyFunc == nil {
		return errNotFaked
	}
	return f.ApplyFunc(m)
}

// DeletePod calls DeletePodFunc.
func (f *FakeSource) DeletePod(ns, name string) error {
	if f.DeletePodFunc == nil {
		return errNotFaked
	}
	return f.DeletePodFunc(ns, name)
}

// Scale calls ScaleFunc.
func (f *FakeSource) Scale(ns, kind, name string, n int) error {
	if f.ScaleFunc == nil {
		return errNotFaked
	}
	return f.ScaleFunc(ns, kind, name, n)
}

// PodDetail calls PodDetailFunc.
func (f *FakeSource) PodDetail(ns, name string) (PodDetail, error) {
	if f.PodDetailFunc == nil {
		return PodDetail{}, errNotFaked
	}
	return f.PodDetailFunc(ns, name)
}

// Faults returns FaultControl.
func (f *FakeSource) Faults() FaultControl { return f.FaultControl }

// Clock returns ClockControl.
func (f *FakeSource) Clock() ClockControl { return f.ClockControl }

// FakeFaults is a FaultControl built from function fields.
type FakeFaults struct {
	VariantsFunc        func(stages.ID) []stages.Variant
	AddFunc             func(stages.Fault) (stages.Fault, error)
	RemoveFunc          func(id int) error
	ListFunc            func() []stages.Fault
	SetBreakpointFunc   func(stages.Breakpoint) error
	ClearBreakpointFunc func(stages.Breakpoint) error
	BreakpointsFunc     func() []stages.Breakpoint
	HeldFunc            func() []stages.Held
	StepFunc            func(pod string) error
	ContinueFunc        func(pod string) error
}

var _ FaultControl = (*FakeFaults)(nil)

// Variants calls VariantsFunc.
func (f *FakeFaults) Variants(id stages.ID) []stages.Variant {
	if f.VariantsFunc == nil {
		return nil
	}
	return f.VariantsFunc(id)
}

// Add calls AddFunc.
func (f *FakeFaults) Add(x stages.Fault) (stages.Fault, error) {
	if f.AddFunc == nil {
		return x, errNotFaked
	}
	return f.AddFunc(x)
}

// Remove calls RemoveFunc.
func (f *FakeFaults) Remove(id int) error {
	if f.RemoveFunc == nil {
		return errNotFaked
	}
	return f.RemoveFunc(id)
}

// List calls ListFunc.
func (f *FakeFaults) List() []stages.Fault {
	if f.ListFunc == nil {
		return nil
	}
	return f.ListFunc()
}

// SetBreakpoint calls SetBreakpointFunc.
func (f *FakeFaults) SetBreakpoint(bp stages.Breakpoint) error {
	if f.SetBreakpointFunc == nil {
		return errNotFaked
	}
	return f.SetBreakpointFunc(bp)
}

// ClearBreakpoint calls ClearBreakpointFunc.
func (f *FakeFaults) ClearBreakpoint(bp stages.Breakpoint) error {
	if f.ClearBreakpointFunc == nil {
		return errNotFaked
	}
	return f.ClearBreakpointFunc(bp)
}

// Breakpoints calls BreakpointsFunc.
func (f *FakeFaults) Breakpoints() []stages.Breakpoint {
	if f.BreakpointsFunc == nil {
		return nil
	}
	return f.BreakpointsFunc()
}

// Held calls HeldFunc.
func (f *FakeFaults) Held() []stages.Held {
	if f.HeldFunc == nil {
		return nil
	}
	return f.HeldFunc()
}

// Step calls StepFunc.
func (f *FakeFaults) Step(pod string) error {
	if f.StepFunc == nil {
		return errNotFaked
	}
	return f.StepFunc(pod)
}

// Continue calls ContinueFunc.
func (f *FakeFaults) Continue(pod string) error {
	if f.ContinueFunc == nil {
		return errNotFaked
	}
	return f.ContinueFunc(pod)
}

// FakeClock is a ClockControl that keeps its state in fields.
type FakeClock struct {
	IsPaused bool
	Rate     float64
	// Real is what RealTime reports.
	Real bool
	// Ran is what FastForward reports it ran.
	Ran string
}

var _ ClockControl = (*FakeClock)(nil)

// Paused returns IsPaused.
func (c *FakeClock) Paused() bool { return c.IsPaused }

// Speed returns Rate (1 when unset).
func (c *FakeClock) Speed() float64 {
	if c.Rate == 0 {
		return 1
	}
	return c.Rate
}

// SetPaused sets IsPaused.
func (c *FakeClock) SetPaused(p bool) error { c.IsPaused = p; return nil }

// SetSpeed sets Rate.
func (c *FakeClock) SetSpeed(s float64) error { c.Rate = s; return nil }

// FastForward returns Ran.
func (c *FakeClock) FastForward() (string, error) { return c.Ran, nil }

// RealTime returns Real.
func (c *FakeClock) RealTime() bool { return c.Real }
