package stages

import (
	"encoding/json"
	"time"
)

// Row is one object as `kubectl get` prints it at one moment: its columns
// come from the object through kubectl's own printers, so the screen says
// what kubectl says. Sources send a Row whenever the object changes.
type Row struct {
	// Time is when the object was seen in this state.
	Time time.Time `json:"time"`
	// Kind is Pod, ReplicaSet, Deployment, StatefulSet, DaemonSet or Job.
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid,omitempty"`
	// Owner is the controlling owner as "Kind/name" (ReplicaSet/web-7d9f), or empty.
	Owner string `json:"owner,omitempty"`
	// Node is the pod's spec.nodeName.
	Node string `json:"node,omitempty"`
	// Created is the object's creationTimestamp: AGE is the time since.
	Created time.Time `json:"created"`
	// Ready is kubectl's READY column: "1/2" for a pod's containers, ready
	// of desired for a workload, COMPLETIONS for a Job.
	Ready string `json:"ready,omitempty"`
	// Status is kubectl's STATUS column for Pods and Jobs (Running,
	// CrashLoopBackOff, Terminating, Complete, ...); empty for workloads,
	// which kubectl prints without one.
	Status string `json:"status,omitempty"`
	// Restarts is kubectl's RESTARTS column for a pod: "2 (5s ago)".
	Restarts string `json:"restarts,omitempty"`
	// Phase is the pod's status.phase, or Terminating once it is being
	// deleted; for workloads "Ready" when every desired replica is ready,
	// else "Progressing".
	Phase string `json:"phase,omitempty"`
	// Done lists the stages the object shows finished (PodScheduled=True
	// closes schedule and bind, a running container its pull, create and
	// start, ...): a lane never shows them failing after this.
	Done []ID `json:"done,omitempty"`
	// Deleted is set when the object is gone from the API.
	Deleted bool `json:"deleted,omitempty"`
}

// Key returns "namespace/name".
func (r Row) Key() string { return r.Namespace + "/" + r.Name }

// Record is one line of podtrace's JSON-lines output and recordings: a
// stage event or, when Row is set, an object's row ({"row": {...}}).
type Record struct {
	Event
	Row *Row `json:"row,omitempty"`
}

// MarshalJSON writes a row as {"row": {...}} alone, an event as itself.
func (r Record) MarshalJSON() ([]byte, error) {
	if r.Row != nil {
		return json.Marshal(struct {
			Row *Row `json:"row"`
		}{r.Row})
	}
	return json.Marshal(r.Event)
}
