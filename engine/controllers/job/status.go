package job

import (
	"sync"
	"time"

	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Back-off before a failed pod is replaced, as upstream's
// DefaultJobPodFailureBackOff and MaxJobPodFailureBackOff.
const (
	DefaultPodFailureBackOff = 10 * time.Second
	MaxPodFailureBackOff     = 10 * time.Minute
)

// Upstream's messages for a Job's conditions.
const (
	msgBackoffLimit = "Job has reached the specified backoff limit"
	msgDeadline     = "Job was active longer than specified deadline"
	msgCompletions  = "Reached expected number of succeeded pods"
)

// condition returns the Job's condition of type t, or nil.
func condition(j *batch.Job, t batch.JobConditionType) *batch.JobCondition {
	for i := range j.Status.Conditions {
		if j.Status.Conditions[i].Type == t {
			return &j.Status.Conditions[i]
		}
	}
	return nil
}

// isTrue reports whether the Job has condition t with status True.
func isTrue(j *batch.Job, t batch.JobConditionType) bool {
	c := condition(j, t)
	return c != nil && c.Status == v1.ConditionTrue
}

// finished reports whether the Job is Complete or Failed.
func finished(j *batch.Job) bool {
	return isTrue(j, batch.JobComplete) || isTrue(j, batch.JobFailed)
}

// setCondition is ensureJobConditionStatus: it adds the condition or
// updates it, moving lastTransitionTime only when the status changes, and
// reports whether anything changed.
func setCondition(j *batch.Job, t batch.JobConditionType, status v1.ConditionStatus, reason, msg string, now time.Time) bool {
	ts := metav1.NewTime(now)
	c := condition(j, t)
	if c == nil {
		j.Status.Conditions = append(j.Status.Conditions, batch.JobCondition{Type: t, Status: status,
			Reason: reason, Message: msg, LastProbeTime: ts, LastTransitionTime: ts})
		return true
	}
	if c.Status == status && c.Reason == reason && c.Message == msg {
		return false
	}
	if c.Status != status {
		c.LastTransitionTime = ts
	}
	c.Status, c.Reason, c.Message, c.LastProbeTime = status, reason, msg, ts
	return true
}

// hasUID reports whether uid is in list.
func hasUID(list []types.UID, uid types.UID) bool {
	for _, u := range list {
		if u == uid {
			return true
		}
	}
	return false
}

// backoffRecord counts the failures since the Job's last success and when
// the last one ended (upstream's backoffRecord).
type backoffRecord struct {
	failures    int
	lastFailure time.Time
}

// remaining returns how long the Job must still wait before creating a
// replacement pod at now: DefaultPodFailureBackOff doubled per failure
// after the first, capped at MaxPodFailureBackOff, from the last failure.
func (r backoffRecord) remaining(now time.Time) time.Duration {
	if r.failures == 0 {
		return 0
	}
	backoff := DefaultPodFailureBackOff
	for i := 1; i < r.failures && backoff < MaxPodFailureBackOff; i++ {
		backoff *= 2
	}
	backoff = min(backoff, MaxPodFailureBackOff)
	return max(backoff-now.Sub(r.lastFailure), 0)
}

// backoffStore holds each Job's backoffRecord, by key.
type backoffStore struct {
	mu      sync.Mutex
	records map[string]backoffRecord
}

func newBackoffStore() *backoffStore { return &backoffStore{records: map[string]backoffRecord{}} }

// observe updates key's record with the pods newly counted: any success
// clears the failures, then each failure adds one, ending at its finish time.
func (s *backoffStore) observe(key string, succeeded int, failedAt []time.Time) backoffRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.records[key]
	if succeeded > 0 {
		r = backoffRecord{}
	}
	for _, t := range failedAt {
		r.failures++
		if t.After(r.lastFailure) {
			r.lastFailure = t
		}
	}
	s.records[key] = r
	return r
}

func (s *backoffStore) get(key string) backoffRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.records[key]
}

func (s *backoffStore) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.records, key)
}

// finishTime is when a finished pod's last container ended, or now when
// the pod says nothing (deleted before it ran).
func finishTime(p *v1.Pod, now time.Time) time.Time {
	var t time.Time
	for _, s := range append(append([]v1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if term := s.State.Terminated; term != nil && term.FinishedAt.After(t) {
			t = term.FinishedAt.Time
		}
	}
	if t.IsZero() {
		return now
	}
	return t
}

// uidSet holds the pods whose finalizer removal the controller sent but
// has not seen yet (upstream's finalizerExpectations): the pod cache may
// still show their finalizer, and they must not be counted twice.
type uidSet struct {
	mu   sync.Mutex
	uids map[types.UID]bool
}

func newUIDSet() *uidSet { return &uidSet{uids: map[types.UID]bool{}} }

func (s *uidSet) add(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.uids[uid] = true
}

func (s *uidSet) remove(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.uids, uid)
}

func (s *uidSet) has(uid types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.uids[uid]
}
