// Package trace is how engine components report stages and how faults and
// breakpoints reach them. Every component holds a *Tracer: it opens a Span
// when a stage starts and ends it with the outcome, and calls Gate before the
// stage's work so that breakpoints can hold it and faults can break it.
package trace

import (
	"time"

	"k8s.io/utils/clock"

	"github.com/podtrace/podtrace/stages"
)

// Ref names the object a stage runs for.
type Ref struct {
	Kind      string // stages.KindPod when empty
	Namespace string
	Name      string
	UID       string
	Node      string
}

// Key returns "namespace/name".
func (r Ref) Key() string { return r.Namespace + "/" + r.Name }

// Tracer stamps and emits stage events, and gates stages with faults and
// breakpoints. A nil *Tracer is valid and does nothing.
type Tracer struct {
	clock  clock.Clock
	out    stages.Emitter
	Faults *Faults
	Breaks *Breakpoints
	ends   *lastEnds
	paused pause
}

// New returns a Tracer that emits to out using clk for timestamps and waits.
func New(clk clock.Clock, out stages.Emitter) *Tracer {
	if out == nil {
		out = stages.Discard
	}
	return &Tracer{clock: clk, out: out, Faults: NewFaults(), Breaks: NewBreakpoints(), ends: newLastEnds()}
}

// Clock returns the tracer's clock.
func (t *Tracer) Clock() clock.Clock { return t.clock }

// Emit stamps e with the current time if it has none, and emits it.
func (t *Tracer) Emit(e stages.Event) {
	if t == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = t.clock.Now()
	}
	if e.Kind == "" {
		e.Kind = stages.KindPod
	}
	t.out.Emit(e)
	t.ends.record(e)
}

// Span is one run of one stage for one object.
type Span struct {
	t     *Tracer
	base  stages.Event
	start time.Time
}

// Begin emits a started event and returns the span to end.
func (t *Tracer) Begin(ref Ref, stage stages.ID, component string) *Span {
	return t.BeginAt(ref, stage, component, time.Time{})
}

// BeginAt is Begin with an explicit start time (zero means now), for stages
// whose start is only known to belong to this object after the fact.
func (t *Tracer) BeginAt(ref Ref, stage stages.ID, component string, start time.Time) *Span {
	if t == nil {
		return &Span{}
	}
	if start.IsZero() {
		start = t.clock.Now()
	}
	s := &Span{t: t, start: start, base: stages.Event{Kind: ref.Kind, Namespace: ref.Namespace, Pod: ref.Name,
		UID: ref.UID, Node: ref.Node, Stage: stage, Component: component, Attempt: 1}}
	e := s.base
	e.Time, e.Status = start, stages.Started
	t.Emit(e)
	return s
}

// BeginWith is Begin with edit applied to every event of the span,
// the started one included (for example the container and attempt of a
// per-container stage).
func (t *Tracer) BeginWith(ref Ref, stage stages.ID, component string, edit func(*stages.Event)) *Span {
	return t.BeginWithAt(ref, stage, component, time.Time{}, edit)
}

// BeginWithAt is BeginWith with an explicit start time (zero means now).
func (t *Tracer) BeginWithAt(ref Ref, stage stages.ID, component string, start time.Time, edit func(*stages.Event)) *Span {
	if t == nil {
		return &Span{}
	}
	if start.IsZero() {
		start = t.clock.Now()
	}
	s := &Span{t: t, start: start, base: stages.Event{Kind: ref.Kind, Namespace: ref.Namespace, Pod: ref.Name,
		UID: ref.UID, Node: ref.Node, Stage: stage, Component: component, Attempt: 1}}
	if edit != nil {
		edit(&s.base)
	}
	e := s.base
	e.Time, e.Status = start, stages.Started
	t.Emit(e)
	return s
}

// With lets the caller set extra fields (container, user, verb, attempt) on
// every event of the span; it returns the span.
func (s *Span) With(f func(*stages.Event)) *Span {
	if s.t != nil {
		f(&s.base)
	}
	return s
}

// Start returns when the span began.
func (s *Span) Start() time.Time { return s.start }

func (s *Span) end(status stages.Status, reason, message string, edit func(*stages.Event)) {
	if s.t == nil {
		return
	}
	e := s.base
	e.Time = s.t.clock.Now()
	e.Status, e.Reason, e.Message = status, reason, message
	e.DurationMs = float64(e.Time.Sub(s.start).Microseconds()) / 1000
	if edit != nil {
		edit(&e)
	}
	s.t.Emit(e)
}

// Succeed ends the span successfully.
func (s *Span) Succeed(reason, message string) { s.end(stages.Succeeded, reason, message, nil) }

// SucceedWith ends the span successfully, letting edit add fields.
func (s *Span) SucceedWith(reason, message string, edit func(*stages.Event)) {
	s.end(stages.Succeeded, reason, message, edit)
}

// Fail ends the span as failed for good.
func (s *Span) Fail(reason, message string) { s.end(stages.Failed, reason, message, nil) }

// FailWith ends the span as failed, letting edit add fields.
func (s *Span) FailWith(reason, message string, edit func(*stages.Event)) {
	s.end(stages.Failed, reason, message, edit)
}

// Retry reports that the attempt failed and the stage will be tried again at next.
func (s *Span) Retry(reason, message string, next time.Time) {
	s.end(stages.Retrying, reason, message, func(e *stages.Event) {
		if !next.IsZero() {
			e.NextTry = &next
		}
	})
}

// Wait reports that the stage is held (for example at a breakpoint).
func (s *Span) Wait(reason, message string) { s.end(stages.Waiting, reason, message, nil) }

// ReadySince is when the pod's ready stage began, given the start of its
// last container as the API has it (in whole seconds) and now: the later
// of that and the end of the pod's last other stage (its start or hooks).
func (t *Tracer) ReadySince(ref Ref, started, now time.Time) time.Time {
	if t != nil {
		if last := t.ends.get(ref.Key()); last.After(started) && !last.After(now) {
			started = last
		}
	}
	if started.IsZero() || started.After(now) {
		return now
	}
	return started
}

// Record emits a finished stage whose start and end are already known: a
// started event at start and an event with status at end.
func (t *Tracer) Record(ref Ref, stage stages.ID, component string, start, end time.Time,
	status stages.Status, reason, message string, edit func(*stages.Event)) {
	if t == nil {
		return
	}
	e := stages.Event{Time: start, Kind: ref.Kind, Namespace: ref.Namespace, Pod: ref.Name, UID: ref.UID,
		Node: ref.Node, Stage: stage, Status: stages.Started, Component: component, Attempt: 1}
	if edit != nil {
		edit(&e)
	}
	t.Emit(e)
	e.Time, e.Status, e.Reason, e.Message = end, status, reason, message
	e.DurationMs = float64(end.Sub(start).Microseconds()) / 1000
	t.Emit(e)
}
