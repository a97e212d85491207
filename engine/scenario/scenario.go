// Package scenario runs workshop scenarios: a YAML file with a title, a
// story, the cluster's nodes, manifests, faults, a goal (a condition on the
// cluster such as "every pod of deployment web is Ready"), what the broken
// cluster shows (expectations), graded hints, an explanation and the
// documented fix. Built-in scenarios are embedded in the binary; a user can
// write their own, and a malformed file gets an error naming line and field.
//
// The life of a scenario: Load or Lookup it, start an engine with its Nodes,
// Prepare the cluster (setup deletions, faults, manifests), watch Goal.Check
// until the learner fixes it; Check does all of that headless and applies
// the documented Fix itself.
package scenario

import (
	"time"

	"github.com/podtrace/podtrace/engine/nodes"
	"github.com/podtrace/podtrace/stages"
)

// Scenario is one workshop exercise.
type Scenario struct {
	// Name identifies the scenario on the command line (the file name without .yaml).
	Name string
	// Title is one line; Story sets the scene for the learner.
	Title, Story string
	// Nodes are the cluster's nodes (three default nodes when the file names none).
	Nodes []nodes.Spec
	// MaxContainerRestartPeriod, when set, caps the real kubelet's
	// crash-loop back-off (its crashLoopBackOff.maxContainerRestartPeriod),
	// so that a crash loop moves at a workshop's pace.
	MaxContainerRestartPeriod time.Duration
	// Setup deletes these objects before anything is applied, as a broken
	// cluster would have lost them ("clusterrolebinding/NAME", "configmap/NS/NAME").
	Setup []string
	// Faults are injected before the manifest is applied.
	Faults []stages.Fault
	// Manifest is applied (as kubectl apply -f) once the nodes are Ready.
	Manifest string
	// Goal is what the learner must reach.
	Goal Goal
	// Expect lists what the broken cluster shows; Check waits for each.
	Expect []Expectation
	// Hints are graded, from a nudge to nearly the answer.
	Hints []string
	// Explanation says what was wrong and why Kubernetes behaved as it did.
	Explanation string
	// Fix is the documented fix; Check applies it and waits for the goal.
	Fix Fix
}

// Goal is a condition on the cluster. Exactly one of Deployment and Pod is set.
type Goal struct {
	// Description says the goal in words, e.g. "every pod of deployment web is Ready".
	Description string
	// Namespace of the object (default "default").
	Namespace string
	// Deployment: every replica of the deployment's current template is Ready.
	Deployment string
	// Pod: the pod is Running and Ready.
	Pod string
}

// Expectation is one thing the broken cluster shows. Exactly one of Stage,
// Event and Waiting is set.
type Expectation struct {
	// Stage: a stage event at this stage, with Status (any when empty), Reason
	// and Message (a substring), lasting at least MinDuration.
	Stage       stages.ID
	Status      stages.Status
	MinDuration time.Duration
	// Event: a Kubernetes Event (kubectl describe, kubectl get events) with this reason and Message.
	Event string
	// Waiting: a container waiting with this reason (kubectl get pods STATUS) and Message.
	Waiting string
	Reason  string
	Message string
}

// Fix is the documented fix.
type Fix struct {
	// Description says the fix in words.
	Description string
	// Apply is a manifest applied as kubectl apply -f.
	Apply string
	// RemoveFaults removes every injected fault (the broken component recovers).
	RemoveFaults bool
	// Annotate, when set, is run after Apply, as kubectl annotate: a real
	// update of the objects, which makes their controller sync at once
	// instead of at the end of its back-off.
	Annotate *Annotate
	// Restart, when set, is run last, as kubectl rollout restart: new pods
	// replace those a kubelet retries on its own back-off.
	Restart *Restart
}
