// Package framework is podtrace's scheduling framework, modelled on the
// Kubernetes scheduler framework: one small interface per extension point, a
// Status where nil means success, precomputed NodeInfos, a CycleState shared by
// the plugins of one scheduling attempt, and an explicit Registry.
package framework

import "strings"

// Code is the outcome of a plugin call.
type Code int

// The codes a Status can carry, as in kube-scheduler.
const (
	// Success means the plugin ran and the pod may go on. A nil *Status is Success.
	Success Code = iota
	// Error is an internal error; the attempt is retried with back-off.
	Error
	// Unschedulable means the pod does not fit now, but preemption may help.
	Unschedulable
	// UnschedulableAndUnresolvable means the pod does not fit and preemption cannot help.
	UnschedulableAndUnresolvable
	// Skip means the plugin has nothing to do for this pod (PreFilter/PreScore only).
	Skip
)

var codeNames = []string{"Success", "Error", "Unschedulable", "UnschedulableAndUnresolvable", "Skip"}

// String returns the code's name.
func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return "Unknown"
}

// Status is the result of a plugin call. A nil *Status means Success.
type Status struct {
	code    Code
	reasons []string
	err     error
	plugin  string
}

// NewStatus returns a status with code and reasons.
func NewStatus(code Code, reasons ...string) *Status {
	return &Status{code: code, reasons: reasons}
}

// AsStatus wraps err as an Error status (nil for a nil err).
func AsStatus(err error) *Status {
	if err == nil {
		return nil
	}
	return &Status{code: Error, reasons: []string{err.Error()}, err: err}
}

// Code returns the status code; Success for nil.
func (s *Status) Code() Code {
	if s == nil {
		return Success
	}
	return s.code
}

// Reasons returns the reasons, e.g. ["Insufficient cpu", "Insufficient memory"].
func (s *Status) Reasons() []string {
	if s == nil {
		return nil
	}
	return s.reasons
}

// Message joins the reasons with ", ", as kube-scheduler does.
func (s *Status) Message() string {
	if s == nil {
		return ""
	}
	return strings.Join(s.reasons, ", ")
}

// Plugin returns the plugin that produced the status, set by the framework.
func (s *Status) Plugin() string {
	if s == nil {
		return ""
	}
	return s.plugin
}

// WithPlugin records which plugin produced the status and returns it.
func (s *Status) WithPlugin(name string) *Status {
	if s != nil {
		s.plugin = name
	}
	return s
}

// IsSuccess reports whether the status is nil or Success.
func (s *Status) IsSuccess() bool { return s.Code() == Success }

// IsSkip reports whether the plugin asked to be skipped.
func (s *Status) IsSkip() bool { return s.Code() == Skip }

// IsRejected reports whether the pod was found not to fit (either unschedulable code).
func (s *Status) IsRejected() bool {
	c := s.Code()
	return c == Unschedulable || c == UnschedulableAndUnresolvable
}

// AsError returns the status as an error, nil for success or skip.
func (s *Status) AsError() error {
	if s.IsSuccess() || s.IsSkip() {
		return nil
	}
	if s.err != nil {
		return s.err
	}
	return statusError{s}
}

type statusError struct{ s *Status }

// Error returns the status message.
func (e statusError) Error() string { return e.s.Message() }
