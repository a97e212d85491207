// Package outcome judges where pods stand, for runs that end when every pod
// is Ready (or Succeeded) or has failed: `podtrace run --headless` and
// scenario checks.
package outcome

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
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

// Summary judges a set of pods against how many are expected.
type Summary struct {
	Done, Failed, Pending int
	Reasons               []string // why pods failed
}

// Judge sums up pods; Finished reports whether nothing is left pending.
func Judge(pods []corev1.Pod, expected int) Summary {
	var s Summary
	for i := range pods {
		if pods[i].DeletionTimestamp != nil {
			continue
		}
		switch st, why := Pod(&pods[i]); st {
		case Done:
			s.Done++
		case Failed:
			s.Failed++
			s.Reasons = append(s.Reasons, why)
		default:
			s.Pending++
		}
	}
	if missing := expected - s.Done - s.Failed - s.Pending; missing > 0 {
		s.Pending += missing
	}
	return s
}

// Finished reports whether every expected pod is done or failed.
func (s Summary) Finished() bool { return s.Pending == 0 }

// Settle is how long a pod must stay Ready, with no container restarting,
// before a run counts it Ready: a container that crashes right after it
// starts is briefly Running and Ready, and is not Ready in any sense a
// user means.
const Settle = 5 * time.Second

// Tracker judges pods over time: a Ready pod counts as Done only once it has
// been Ready, with no container restart, for Settle.
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

// Judge is the package's Judge, except that a Ready pod is Pending until
// it has settled at now.
func (t *Tracker) Judge(pods []corev1.Pod, expected int, now time.Time) Summary {
	judged := make([]corev1.Pod, 0, len(pods))
	var unsettled int
	for i := range pods {
		p := &pods[i]
		st, why := Pod(p)
		restarts := restartCount(p)
		s, ok := t.seen[p.UID]
		ready := st == Done && why == "Ready"
		if !ok || s.restarts != restarts || s.ready != ready {
			s = settling{restarts: restarts, since: now, ready: ready}
			t.seen[p.UID] = s
		}
		if ready && now.Sub(s.since) < t.settle && p.DeletionTimestamp == nil {
			unsettled++
			continue
		}
		judged = append(judged, *p)
	}
	sum := Judge(judged, expected-unsettled)
	sum.Pending += unsettled
	return sum
}

func restartCount(p *corev1.Pod) int32 {
	var n int32
	for _, s := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		n += s.RestartCount
	}
	return n
}
