package stages

import "time"

// Status is where a stage stands.
type Status string

// The statuses an Event can report.
const (
	Started   Status = "started"   // the stage began
	Succeeded Status = "succeeded" // the stage finished
	Failed    Status = "failed"    // the stage failed; Reason and Message say why
	Retrying  Status = "retrying"  // the stage failed and will be tried again (NextTry says when)
	Waiting   Status = "waiting"   // the stage is held: a breakpoint, or waiting on something else
)

// Terminal reports whether the status ends the stage (succeeded or failed).
func (s Status) Terminal() bool { return s == Succeeded || s == Failed }

// Kinds of object an Event can be about.
const (
	KindPod         = "Pod"
	KindReplicaSet  = "ReplicaSet"
	KindDeployment  = "Deployment"
	KindStatefulSet = "StatefulSet"
	KindDaemonSet   = "DaemonSet"
	KindJob         = "Job"
	KindCronJob     = "CronJob"
)

// OwnerKinds lists, for a kind, the kinds of controller that create objects
// of it, as kube-controller-manager's controllers do.
var OwnerKinds = map[string][]string{
	KindPod:        {KindReplicaSet, KindStatefulSet, KindDaemonSet, KindJob},
	KindReplicaSet: {KindDeployment},
	KindJob:        {KindCronJob},
}

// Event reports one step of one stage of one object (usually a pod). Its JSON
// form is podtrace's public output and recording format (see README).
type Event struct {
	// Time is when the step happened, on the engine's clock.
	Time time.Time `json:"time"`
	// Kind is the kind of object: Pod (the default), ReplicaSet or Deployment.
	Kind string `json:"kind,omitempty"`
	// Namespace and Pod name the object; Pod holds the object's name whatever its kind.
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	UID       string `json:"uid,omitempty"`
	Stage     ID     `json:"stage"`
	Status    Status `json:"status"`
	// Component is who did the work: kube-apiserver, kube-scheduler, kubelet, ...
	Component string `json:"component"`
	Node      string `json:"node,omitempty"`
	// Container names the container for per-container stages (pull, create, start, hooks, ready).
	Container string `json:"container,omitempty"`
	// Attempt counts tries of the stage, from 1.
	Attempt int `json:"attempt,omitempty"`
	// DurationMs is how long the stage took, for terminal statuses.
	DurationMs float64 `json:"durationMs"`
	// Reason and Message are Kubernetes' own, where it has one (FailedScheduling, ...).
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// User made the API request, for API stages; UserAgent is its client.
	User      string `json:"user,omitempty"`
	UserAgent string `json:"userAgent,omitempty"`
	// Verb is the API verb for API stages: create, update, patch, delete.
	Verb string `json:"verb,omitempty"`
	// NextTry is when a retrying stage will be tried again.
	NextTry *time.Time `json:"nextTry,omitempty"`
	// Scheduling holds the per-node, per-plugin verdicts of a scheduling attempt.
	Scheduling *SchedulingResult `json:"scheduling,omitempty"`
	// Source says where an attached cluster's event came from when not from
	// its objects and Events: SourceSpans for the cluster's own
	// OpenTelemetry spans (attach --otlp-listen).
	Source string `json:"source,omitempty"`
}

// SourceSpans marks an event folded from a real cluster's own spans.
const SourceSpans = "spans"

// Key returns "namespace/name", the key of the object the event is about.
func (e Event) Key() string { return e.Namespace + "/" + e.Pod }

// SchedulingResult records one scheduling attempt: what each filter plugin
// said of each node, and how the feasible nodes scored.
type SchedulingResult struct {
	Nodes []NodeVerdict `json:"nodes"`
	// Chosen is the node picked, empty when none fit.
	Chosen string `json:"chosen,omitempty"`
}

// NodeVerdict is the scheduler's verdict on one node.
type NodeVerdict struct {
	Node string `json:"node"`
	// Plugin is the filter plugin that rejected the node, empty when it fit.
	Plugin string `json:"plugin,omitempty"`
	// Reason is the rejecting plugin's reason, e.g. "Insufficient cpu".
	Reason string `json:"reason,omitempty"`
	// Scores holds each score plugin's normalized, weighted score; Total their sum.
	Scores map[string]int64 `json:"scores,omitempty"`
	Total  int64            `json:"total,omitempty"`
}

// Emitter receives stage events. Implementations must not block the caller
// for long: the engine calls Emit on its hot paths.
type Emitter interface {
	Emit(Event)
}

// EmitterFunc adapts a function to an Emitter.
type EmitterFunc func(Event)

// Emit calls f(e).
func (f EmitterFunc) Emit(e Event) { f(e) }

// Discard is an Emitter that drops every event.
var Discard Emitter = EmitterFunc(func(Event) {})
