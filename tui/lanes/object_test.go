package lanes

import (
	"testing"
	"time"

	"github.com/podtrace/podtrace/stages"
)

func row(kind, name string, at time.Duration, edit func(*stages.Row)) stages.Row {
	r := stages.Row{Time: t0.Add(at), Kind: kind, Namespace: "default", Name: name, Created: t0}
	edit(&r)
	return r
}

// A fixed pull: the pod runs, so the object closes the failed pull and
// the cause goes, though the last pull event said ErrImagePull.
func TestApplyClosesWhatTheObjectShowsDone(t *testing.T) {
	t.Parallel()
	s := New()
	pull := ev("", "p", stages.Pull, stages.Retrying, time.Second)
	pull.Reason, pull.Message = "ErrImagePull", `failed to pull image "nginx:1.277": not found`
	s.Fold(pull)
	l := s.Get(LaneKey(stages.KindPod, "default", "p"))
	if l.Status != "ErrImagePull" || !l.Failing() {
		t.Fatalf("before the row: %q failing=%v", l.Status, l.Failing())
	}
	s.Apply(row(stages.KindPod, "p", 5*time.Second, func(r *stages.Row) {
		r.Status, r.Ready, r.Restarts, r.Phase = "Running", "1/1", "0", "Running"
		r.Done = []stages.ID{stages.Persist, stages.Schedule, stages.Bind, stages.Pull, stages.Create, stages.Start, stages.Ready}
	}))
	if l.Status != "Running" || l.Failing() || l.Cell(stages.Pull).State != Done {
		t.Errorf("after the row: %q failing=%v pull=%v", l.Status, l.Failing(), l.Cell(stages.Pull).State)
	}
	if r, m := l.Cause(); r != "" || m != "" {
		t.Errorf("cause %q %q, want none", r, m)
	}
	if got := s.PhaseCounts()["Running"]; got != 1 {
		t.Errorf("running pods = %d, want 1", got)
	}
}

// A crash loop reads as kubectl says it: STATUS and RESTARTS from the
// object, the start cell still backing off.
func TestApplyCrashLoop(t *testing.T) {
	t.Parallel()
	s := New()
	start := ev("", "p", stages.Start, stages.Retrying, time.Second)
	start.Attempt, start.Reason = 4, "BackOff"
	s.Fold(start)
	s.Apply(row(stages.KindPod, "p", 2*time.Second, func(r *stages.Row) {
		r.Status, r.Ready, r.Restarts, r.Phase = "Error", "0/1", "2 (5s ago)", "Running"
		r.Done = []stages.ID{stages.Persist, stages.Schedule, stages.Bind, stages.Pull}
	}))
	l := s.Get(LaneKey(stages.KindPod, "default", "p"))
	if l.Status != "Error" || l.Restarts() != 2 || l.Cell(stages.Start).State != Retrying || !l.Failing() {
		t.Errorf("got %q restarts %d start %v failing %v", l.Status, l.Restarts(), l.Cell(stages.Start).State, l.Failing())
	}
}

// An owner reads the object's READY, even when the pods it could create
// are all ready (a quota keeps the rest away).
func TestApplyOwnerReady(t *testing.T) {
	t.Parallel()
	s := New()
	s.Fold(ev(stages.KindDeployment, "shop", stages.Persist, stages.Succeeded, 0))
	for _, p := range []string{"shop-1", "shop-2"} {
		s.Fold(ev("", p, stages.Ready, stages.Succeeded, time.Second))
	}
	s.Apply(row(stages.KindDeployment, "shop", 2*time.Second, func(r *stages.Row) { r.Ready, r.Phase = "2/4", "Progressing" }))
	s.Rows()
	l := s.Get(LaneKey(stages.KindDeployment, "default", "shop"))
	if l.Status != "2/4 ready" || l.Phase != "Progressing" {
		t.Errorf("deployment: %q %q, want 2/4 ready Progressing", l.Status, l.Phase)
	}
}

// An object seen before its events (attach to a running cluster) has a
// lane; one deleted keeps its lane, as deleted.
func TestApplyNewAndDeleted(t *testing.T) {
	t.Parallel()
	s := New()
	s.Apply(row(stages.KindPod, "q", 0, func(r *stages.Row) { r.Status, r.Phase = "ImagePullBackOff", "Pending" }))
	if got := len(s.Rows()); got != 1 {
		t.Fatalf("rows = %d, want 1", got)
	}
	l := s.Get(LaneKey(stages.KindPod, "default", "q"))
	if l.Status != "ImagePullBackOff" || !l.First.Equal(t0) {
		t.Errorf("new lane: %q first %v", l.Status, l.First)
	}
	s.Apply(row(stages.KindPod, "q", time.Second, func(r *stages.Row) { r.Status, r.Phase, r.Deleted = "Deleted", "Deleted", true }))
	if !l.Deleted || l.Status != "Deleted" {
		t.Errorf("deleted lane: %v %q", l.Deleted, l.Status)
	}
	s.Apply(row(stages.KindPod, "gone", 0, func(r *stages.Row) { r.Deleted = true }))
	if s.Get(LaneKey(stages.KindPod, "default", "gone")) != nil {
		t.Error("a deletion of an object never seen made a lane")
	}
}

// A completed pod (a Job's) has no cause: its ready stage never comes.
func TestApplyCompletedPod(t *testing.T) {
	t.Parallel()
	s := New()
	ready := ev("", "once-x", stages.Ready, stages.Retrying, time.Second)
	ready.Reason = "PodCompleted"
	s.Fold(ev("", "once-x", stages.Start, stages.Succeeded, 0))
	s.Fold(ready)
	s.Apply(row(stages.KindPod, "once-x", 2*time.Second, func(r *stages.Row) {
		r.Status, r.Ready, r.Phase = "Completed", "0/1", "Succeeded"
		r.Done = []stages.ID{stages.Persist, stages.Start}
	}))
	if l := s.Get(LaneKey(stages.KindPod, "default", "once-x")); l.Failing() || l.Status != "Completed" {
		t.Errorf("completed pod: %q failing=%v", l.Status, l.Failing())
	}
}
