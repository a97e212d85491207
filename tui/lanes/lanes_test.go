package lanes

import (
	"testing"
	"time"

	"github.com/podtrace/podtrace/stages"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func ev(kind, name string, id stages.ID, st stages.Status, at time.Duration) stages.Event {
	return stages.Event{Time: t0.Add(at), Kind: kind, Namespace: "default", Pod: name, Stage: id, Status: st, Attempt: 1}
}

func TestFoldCellStates(t *testing.T) {
	s := New()
	s.Fold(ev("", "p", stages.Schedule, stages.Started, 0))
	done := ev("", "p", stages.Schedule, stages.Succeeded, 3*time.Millisecond)
	done.DurationMs = 3
	s.Fold(done)
	next := t0.Add(10 * time.Second)
	retry := ev("", "p", stages.Pull, stages.Retrying, time.Second)
	retry.Attempt, retry.Reason, retry.NextTry = 2, "BackOff", &next
	s.Fold(retry)
	l := s.Get(LaneKey(stages.KindPod, "default", "p"))
	if l == nil {
		t.Fatal("no lane for p")
	}
	if c := l.Cell(stages.Schedule); c.State != Done || c.Duration != 3*time.Millisecond {
		t.Errorf("schedule cell = %v %v, want Done 3ms", c.State, c.Duration)
	}
	if c := l.Cell(stages.Pull); c.State != Retrying || c.Attempt != 2 || !c.NextTry.Equal(next) {
		t.Errorf("pull cell = %+v", c)
	}
	if l.Status != "ImagePullBackOff" || l.Phase != "Pending" {
		t.Errorf("status = %s/%s, want ImagePullBackOff/Pending", l.Status, l.Phase)
	}
	if !l.TimeDependent() {
		t.Error("a retrying lane shows a countdown, so it depends on time")
	}
}

func TestStatusLikeKubectl(t *testing.T) {
	tests := []struct {
		name   string
		events []stages.Event
		want   string
	}{
		{"new", []stages.Event{ev("", "p", stages.Persist, stages.Succeeded, 0)}, "Pending"},
		{"unschedulable", []stages.Event{ev("", "p", stages.Schedule, stages.Retrying, 0)}, "Pending"},
		{"bound", []stages.Event{ev("", "p", stages.Bind, stages.Succeeded, 0)}, "Pending"},
		{"kubelet syncing", []stages.Event{ev("", "p", stages.Bind, stages.Succeeded, 0), ev("", "p", stages.Kubelet, stages.Started, 1)}, "ContainerCreating"},
		{"started", []stages.Event{ev("", "p", stages.Start, stages.Succeeded, 0)}, "Running"},
		{"crashloop", []stages.Event{ev("", "p", stages.Start, stages.Retrying, 0)}, "CrashLoopBackOff"},
		{"terminating", []stages.Event{ev("", "p", stages.Ready, stages.Succeeded, 0), ev("", "p", stages.Terminate, stages.Started, 1)}, "Terminating"},
		{"held at a breakpoint", []stages.Event{ev("", "p", stages.Bind, stages.Succeeded, 0), ev("", "p", stages.Sandbox, stages.Waiting, 1)}, "ContainerCreating"},
		{"crash reported on ready, then start backs off", []stages.Event{
			ev("", "p", stages.Start, stages.Succeeded, 0),
			withReason(ev("", "p", stages.Ready, stages.Retrying, 1), "ContainerExited"),
			ev("", "p", stages.Start, stages.Started, 2),
			withReason(ev("", "p", stages.Start, stages.Retrying, 3), "CrashLoopBackOff"),
		}, "CrashLoopBackOff"},
		{"recovered after back-off", []stages.Event{
			withReason(ev("", "p", stages.Pull, stages.Retrying, 0), "ImagePullBackOff"),
			ev("", "p", stages.Pull, stages.Succeeded, 1), ev("", "p", stages.Start, stages.Succeeded, 2),
		}, "Running"},
		{"engine reason wins", []stages.Event{withReason(ev("", "p", stages.Pull, stages.Retrying, 0), "ErrImagePull")}, "ErrImagePull"},
		{"deleted", []stages.Event{ev("", "p", stages.Start, stages.Succeeded, 0), ev("", "p", stages.Delete, stages.Succeeded, 1)}, "Deleted"},
		{"rs reconciled", []stages.Event{ev(stages.KindReplicaSet, "p", stages.Reconcile, stages.Succeeded, 0)}, "0/0 ready"},
	}
	for _, tt := range tests {
		s := New()
		for _, e := range tt.events {
			s.Fold(e)
		}
		if got := s.Rows()[0].Status; got != tt.want {
			t.Errorf("%s: status %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestOwnersSayHowManyPodsAreReady(t *testing.T) {
	s := New()
	ready := func(name string, at time.Duration) {
		s.Fold(ev("", name, stages.Start, stages.Succeeded, at))
		s.Fold(ev("", name, stages.Ready, stages.Succeeded, at))
	}
	s.Fold(ev(stages.KindDeployment, "web", stages.Persist, stages.Succeeded, 0))
	if got := s.Rows()[0].Status; got != "Pending" {
		t.Fatalf("a Deployment without ReplicaSet says %q, want Pending", got)
	}
	s.Fold(ev(stages.KindReplicaSet, "web-7d9c", stages.Reconcile, stages.Succeeded, 1))
	ready("web-7d9c-a1", 2)
	ready("web-7d9c-b2", 3)
	s.Fold(ev("", "web-7d9c-c3", stages.Pull, stages.Started, 4))
	statuses := func() (string, string, string) {
		rows := s.Rows()
		return rows[0].Status, rows[1].Status, rows[0].Phase
	}
	if d, rs, ph := statuses(); d != "2/3 ready" || rs != "2/3 ready" || ph != "Progressing" {
		t.Fatalf("two of three pods ready: deploy %q, rs %q, phase %q", d, rs, ph)
	}
	v := s.Rows()[0].Version
	ready("web-7d9c-c3", 5)
	if d, rs, ph := statuses(); d != "3/3 ready" || rs != "3/3 ready" || ph != "Ready" {
		t.Fatalf("all pods ready: deploy %q, rs %q, phase %q", d, rs, ph)
	}
	if s.Rows()[0].Version == v {
		t.Fatal("the Deployment lane changed without a new Version: its cached row would be stale")
	}
	s.Fold(ev("", "web-7d9c-a1", stages.Terminate, stages.Started, 6))
	if d, _, _ := statuses(); d != "2/2 ready" {
		t.Fatalf("a terminating pod still counts: deploy %q", d)
	}
	s.Fold(withReason(ev(stages.KindReplicaSet, "web-7d9c", stages.Reconcile, stages.Retrying, 7), "FailedCreate"))
	if _, rs, _ := statuses(); rs != "FailedCreate" {
		t.Fatalf("a ReplicaSet failing to create pods says %q, want FailedCreate", rs)
	}
}

func TestRowsGroupUnderOwnersAndFilter(t *testing.T) {
	s := New()
	for _, e := range []stages.Event{
		ev("", "web-7d9c-b2", stages.Persist, stages.Succeeded, 3),
		ev("", "solo", stages.Persist, stages.Succeeded, 0),
		ev("", "web-7d9c-a1", stages.Persist, stages.Succeeded, 2),
		ev(stages.KindReplicaSet, "web-7d9c", stages.Persist, stages.Succeeded, 1),
		ev(stages.KindDeployment, "web", stages.Persist, stages.Succeeded, 0),
	} {
		s.Fold(e)
	}
	var got []string
	for _, l := range s.Rows() {
		got = append(got, l.Kind+":"+l.Name+":"+string(rune('0'+l.Depth)))
	}
	want := []string{"Deployment:web:0", "ReplicaSet:web-7d9c:1", "Pod:web-7d9c-a1:2", "Pod:web-7d9c-b2:2", "Pod:solo:0"}
	if len(got) != len(want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("rows %v, want %v", got, want)
		}
	}
	s.SetFilter("B2")
	rows := s.Rows()
	if len(rows) != 3 || rows[2].Name != "web-7d9c-b2" {
		t.Fatalf("filter b2 kept %d rows (%v); want the pod with its owners", len(rows), rows)
	}
	if s.PhaseCounts()["Pending"] != 3 {
		t.Errorf("phase counts %v, want 3 pending pods", s.PhaseCounts())
	}
}

func withReason(e stages.Event, r string) stages.Event {
	e.Reason = r
	return e
}
