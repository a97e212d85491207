// Package tui is podtrace's terminal UI: a swimlane per pod, a detail pane
// that teaches what each stage does, an events pane, a timeline, and keys to
// apply workloads, break stages and drive the clock. It reads everything
// through a Source and never imports the engine.
package tui

import (
	"time"

	"github.com/podtrace/podtrace/stages"
)

// Source is where the UI gets its events and sends its commands. The
// embedded engine, a real cluster and a recording are Sources. A Source
// that cannot do something returns an error saying why (for example "read-only:
// attached to cluster prod"); Faults and Clock may return nil when the Source
// has no such control.
type Source interface {
	// Name says what the UI is looking at: "embedded", "cluster prod", "recording run.jsonl".
	Name() string
	// Events delivers stage events; it is closed when the Source ends.
	Events() <-chan stages.Event
	// Status returns the facts for the header. It must be cheap: the UI calls it about once a second.
	Status() Status
	// Workloads lists the built-in demo workloads the apply key offers.
	Workloads() []Workload
	// Apply creates or updates the objects in a YAML or JSON manifest.
	Apply(manifest []byte) error
	// DeletePod deletes one pod.
	DeletePod(namespace, name string) error
	// Scale sets the replicas of a Deployment or ReplicaSet (kind is stages.KindDeployment or stages.KindReplicaSet).
	Scale(namespace, kind, name string, replicas int) error
	// PodDetail returns the object as stored: conditions, Kubernetes events, owner.
	PodDetail(namespace, name string) (PodDetail, error)
	// Faults returns the fault and breakpoint controls, or nil.
	Faults() FaultControl
	// Clock returns the clock controls, or nil.
	Clock() ClockControl
}

// Status holds the header facts.
type Status struct {
	NodesReady, NodesTotal int
	// Etcd is "healthy" or what is wrong with it; empty when not known.
	Etcd string
	// Runtime is the container runtime kind: "simulated", "containerd", or empty.
	Runtime string
	// ReadOnly, when set, says why commands are unavailable.
	ReadOnly string
	// Resolution is the precision of the Source's timestamps (a real
	// cluster's events have one second); durations are not drawn finer.
	// Zero means exact.
	Resolution time.Duration
	// Unobservable lists the stages this Source cannot see; their cells say so.
	Unobservable []stages.ID
}

// Workload is a built-in demo workload.
type Workload struct {
	Name, Description string
	Manifest          []byte
}

// PodDetail is a pod as stored, for the detail pane.
type PodDetail struct {
	Phase, Node, IP string
	// Owner is "Kind/name" of the controlling owner, empty when none.
	Owner      string
	Conditions []Condition
	Events     []K8sEvent
	// Waiting are its containers waiting to (re)start.
	Waiting []ContainerWait
	// Object is the stored object (YAML), shown while the pod is held at a breakpoint.
	Object string
}

// Condition is one pod condition.
type Condition struct {
	Type, Status, Reason, Message string
	LastTransition                time.Time
}

// K8sEvent is one core/v1 Event about the pod.
type K8sEvent struct {
	Type, Reason, Source, Message string
	Count                         int
	LastSeen                      time.Time
	// FirstSeen is when the Event first happened; zero when not known (the
	// events pane then keeps the first LastSeen it saw).
	FirstSeen time.Time
	// Namespace and Name name the Event object itself (updates of the same
	// Event share them); Object is its involved object as kubectl prints it,
	// "pod/web-1". They are set for events from KubeEventSource.
	Namespace, Name, Object string
}

// KubeEventSource is a Source that also delivers the cluster's own
// Kubernetes Events (core/v1): the events pane then shows them, as
// `kubectl get events -w` would, instead of the reasons in stage events.
type KubeEventSource interface {
	// KubeEvents delivers each Event when it is created and when it is
	// updated (a repeat raises Count). A nil channel means none.
	KubeEvents() <-chan K8sEvent
}

// RowSource is a Source that also delivers the objects' rows as `kubectl
// get` prints them: a lane's STATUS, READY, RESTARTS and AGE then come
// from the object, and the stages it shows done are closed.
type RowSource interface {
	// Rows delivers an object's row whenever it changes. A nil channel means none.
	Rows() <-chan stages.Row
}

// FaultControl injects faults and manages breakpoints.
type FaultControl interface {
	// Variants lists the realistic failures a stage offers ("" first: the default).
	Variants(stage stages.ID) []stages.Variant
	// Add injects a fault and returns it with its ID set.
	Add(f stages.Fault) (stages.Fault, error)
	// Remove deletes the fault with that ID.
	Remove(id int) error
	// List returns the active faults.
	List() []stages.Fault
	// SetBreakpoint stops pods in scope before stage.
	SetBreakpoint(bp stages.Breakpoint) error
	// ClearBreakpoint removes a breakpoint equal to bp.
	ClearBreakpoint(bp stages.Breakpoint) error
	// Breakpoints returns the breakpoints set.
	Breakpoints() []stages.Breakpoint
	// Held returns the pods held at a breakpoint.
	Held() []stages.Held
	// Step runs the held pod's stage and holds it before the next one.
	Step(pod string) error
	// Continue releases the held pod ("" releases every pod).
	Continue(pod string) error
}

// ClockControl is what the pause, speed and fast-forward keys drive: a
// replay's clock, or a live cluster's gates and simulated runtime.
type ClockControl interface {
	// Paused and Speed report the state the keys set.
	Paused() bool
	Speed() float64
	// SetPaused pauses or resumes: a replay's clock, or every gate of a
	// live cluster.
	SetPaused(paused bool) error
	// SetSpeed sets a replay's recorded seconds per real second, or a live
	// cluster's simulated runtime speed.
	SetSpeed(speed float64) error
	// FastForward runs what is pending now (a replay's next event, a
	// cluster's scheduling retries and controller syncs) and says what that
	// was, for the status line, or why nothing was pending (whose waits
	// remain and how long is left).
	FastForward() (string, error)
	// RealTime reports whether the Source's events are stamped on real
	// time, as a live cluster's components run on whatever the keys do,
	// rather than on a clock that pause and speed drive (a replay).
	RealTime() bool
}
