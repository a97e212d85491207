// Package outcome judges where the objects of a run stand, for runs that
// end when every workload is done or one has failed (`podtrace run
// --headless`): workloads as kubectl rollout status and kubectl wait judge
// them, pods by their phase, conditions and waiting reasons.
package outcome

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// State is a pod's standing.
type State int

// The states a pod can be judged in.
const (
	Pending State = iota // still on its way
	Done                 // Running and Ready, or Succeeded
	Failed               // failed, or stuck where Kubernetes keeps retrying
)

// stuck are the waiting reasons of a container that will not start without
// a change to the cluster or the pod.
var stuck = map[string]bool{
	"ImagePullBackOff": true, "CrashLoopBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
}

// Pod judges one pod and says why.
func Pod(p *corev1.Pod) (State, string) {
	switch p.Status.Phase {
	case corev1.PodSucceeded:
		return Done, "Succeeded"
	case corev1.PodFailed:
		reason := p.Status.Reason
		if reason == "" {
			reason = "Failed"
		}
		return Failed, fmt.Sprintf("%s/%s: %s %s", p.Namespace, p.Name, reason, p.Status.Message)
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return Done, "Ready"
		}
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return Failed, fmt.Sprintf("%s/%s: FailedScheduling: %s", p.Namespace, p.Name, c.Message)
		}
	}
	for _, s := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if w := s.State.Waiting; w != nil && stuck[w.Reason] {
			return Failed, fmt.Sprintf("%s/%s: container %s: %s: %s", p.Namespace, p.Name, s.Name, w.Reason, w.Message)
		}
	}
	return Pending, ""
}

// Target is one object of a run's manifests that the run waits for (its
// kind is Watched).
type Target struct {
	Kind, Namespace, Name string
	// Live is the object as the cluster has it now; nil while it does not exist.
	Live *unstructured.Unstructured
}

// String names the target as `statefulset default/web`.
func (t Target) String() string {
	return strings.ToLower(t.Kind) + " " + t.Namespace + "/" + t.Name
}

// Summary sums up a run's targets.
type Summary struct {
	Done, Failed, Pending int
	Reasons               []string // why targets failed
	Waiting               []string // what pending targets wait for
}

// Finished reports whether every target is done or failed.
func (s Summary) Finished() bool { return s.Pending == 0 }

// Settle is how long a pod must stay Ready, with no container restarting,
// before a run counts it Ready: a container that crashes right after it
// starts is briefly Running and Ready, and is not Ready in any sense a
// user means.
const Settle = 5 * time.Second

// Tracker judges a run's targets over time: a target is done once
// Workload says so and every Ready pod of it has been Ready, with no
// container restart, for the settle period.
type Tracker struct {
	settle time.Duration
	seen   map[types.UID]settling
}

type settling struct {
	restarts int32
	since    time.Time // Ready and restarts unchanged since then
	ready    bool
}

// NewTracker returns a Tracker with the given settle period.
func NewTracker(settle time.Duration) *Tracker {
	return &Tracker{settle: settle, seen: map[types.UID]settling{}}
}

// Judge sums up targets at now; pods are the pods of their namespaces. A
// target fails when Workload says it failed or when one of its pods is
// stuck (Pod says Failed; a failed pod of a Job only counts through the
// Job's own Failed condition, since the Job replaces it).
func (t *Tracker) Judge(targets []Target, pods []corev1.Pod, now time.Time) Summary {
	var s Summary
	for _, tg := range targets {
		switch st, why := t.target(tg, pods, now); st {
		case Done:
			s.Done++
		case Failed:
			s.Failed++
			s.Reasons = append(s.Reasons, why)
		default:
			s.Pending++
			s.Waiting = append(s.Waiting, why)
		}
	}
	return s
}

// target judges one target and its pods.
func (t *Tracker) target(tg Target, pods []corev1.Pod, now time.Time) (State, string) {
	if tg.Live == nil {
		return Pending, tg.String() + ": not created yet"
	}
	st, why := Workload(tg.Live)
	if st == Failed {
		return st, why
	}
	owned, err := podsOf(tg.Live, pods)
	if err != nil {
		return Failed, fmt.Sprintf("%s: %v", tg, err)
	}
	isJob := tg.Live.GroupVersionKind().GroupKind() == jobKind
	unsettled := ""
	for _, p := range owned {
		if p.DeletionTimestamp != nil {
			continue
		}
		pst, pwhy := Pod(p)
		if pst == Failed && !(isJob && p.Status.Phase == corev1.PodFailed) {
			return Failed, pwhy
		}
		if !t.settled(p, pst == Done && pwhy == "Ready", now) && unsettled == "" {
			unsettled = fmt.Sprintf("pod %s/%s: Ready for less than %s", p.Namespace, p.Name, t.settle)
		}
	}
	if st == Done && unsettled != "" {
		return Pending, unsettled
	}
	if st == Pending {
		why = tg.String() + ": " + why
	}
	return st, why
}

// settled records p and reports whether it is not Ready or has been
// Ready, with its restart count unchanged, for the settle period at now.
func (t *Tracker) settled(p *corev1.Pod, ready bool, now time.Time) bool {
	restarts := restartCount(p)
	s, ok := t.seen[p.UID]
	if !ok || s.restarts != restarts || s.ready != ready {
		s = settling{restarts: restarts, since: now, ready: ready}
		t.seen[p.UID] = s
	}
	return !ready || now.Sub(s.since) >= t.settle
}

func restartCount(p *corev1.Pod) int32 {
	var n int32
	for _, s := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		n += s.RestartCount
	}
	return n
}
