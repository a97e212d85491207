package lanes

import (
	"strings"
	"testing"
	"time"

	"github.com/podtrace/podtrace/stages"
)

// rowNames lists the rows as kind:name.
func rowNames(s *Store) string {
	var out []string
	for _, l := range s.Rows() {
		out = append(out, l.Kind+":"+l.Name)
	}
	return strings.Join(out, " ")
}

func withMessage(e stages.Event, reason, msg string) stages.Event {
	e.Reason, e.Message = reason, msg
	return e
}

// The rules that keep lanes from lying, one table row each.
func TestLanesNeverLie(t *testing.T) {
	quota := `pods "web-7d9c-x1" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2`
	next := t0.Add(time.Minute)
	retry := func(e stages.Event) stages.Event { e.NextTry = &next; return e }
	attempt := func(e stages.Event, n int) stages.Event { e.Attempt = n; return e }
	owners := []stages.Event{
		ev(stages.KindDeployment, "web", stages.Persist, stages.Succeeded, 0),
		ev(stages.KindReplicaSet, "web-7d9c", stages.Reconcile, stages.Succeeded, 0),
	}
	running := func(name string, at time.Duration) []stages.Event {
		return []stages.Event{ev("", name, stages.Persist, stages.Succeeded, at), ev("", name, stages.Start, stages.Succeeded, at),
			ev("", name, stages.Ready, stages.Succeeded, at)}
	}
	tests := []struct {
		name   string
		events [][]stages.Event
		check  func(t *testing.T, s *Store)
	}{
		{"a refused create is no pod: no row, no phase, not in n/m ready; the owner shows it", [][]stages.Event{owners,
			running("web-7d9c-a1", 1),
			{ev("", "web-7d9c-x1", stages.Authn, stages.Succeeded, 2), ev("", "web-7d9c-x1", stages.Authz, stages.Succeeded, 2),
				withMessage(ev("", "web-7d9c-x1", stages.Admission, stages.Failed, 2), "Forbidden", quota),
				withMessage(ev("", "web-7d9c-x1", stages.Reconcile, stages.Failed, 3), "FailedCreate", "Error creating: "+quota)}},
			func(t *testing.T, s *Store) {
				if got := rowNames(s); strings.Contains(got, "x1") {
					t.Errorf("the refused pod has a row: %s", got)
				}
				if n := s.PhaseCounts()["Pending"]; n != 0 {
					t.Errorf("the refused pod counts as Pending: %v", s.PhaseCounts())
				}
				rs := s.Get(LaneKey(stages.KindReplicaSet, "default", "web-7d9c"))
				if rs.Status != "1/1 ready" {
					t.Errorf("the ReplicaSet says %q, want 1/1 ready", rs.Status)
				}
				if r, m := rs.Cause(); r != "FailedCreate" || !strings.Contains(m, "exceeded quota") {
					t.Errorf("the ReplicaSet's cause is %q %q, want the refused create", r, m)
				}
			}},
		{"a pod created after a refusal clears the owner's note", [][]stages.Event{owners,
			{withMessage(ev("", "web-7d9c-x1", stages.Admission, stages.Failed, 1), "Forbidden", quota)},
			running("web-7d9c-a2", 5)},
			func(t *testing.T, s *Store) {
				if r, _ := s.Get(LaneKey(stages.KindReplicaSet, "default", "web-7d9c")).Cause(); r != "" {
					t.Errorf("the ReplicaSet still shows %q after creating a pod", r)
				}
			}},
		{"deleting a pod clears its retry countdowns", [][]stages.Event{
			{retry(ev("", "p", stages.Pull, stages.Retrying, 0)), ev("", "p", stages.Terminate, stages.Started, 1)}},
			func(t *testing.T, s *Store) {
				l := s.Get(LaneKey(stages.KindPod, "default", "p"))
				if c := l.Cell(stages.Pull); c.State == Retrying || !c.NextTry.IsZero() {
					t.Errorf("pull still counts down after delete: %v %v", c.State, c.NextTry)
				}
			}},
		{"a restart resets the ready cell", [][]stages.Event{running("p", 0), {attempt(ev("", "p", stages.Start, stages.Started, 2), 2)}},
			func(t *testing.T, s *Store) {
				if c := s.Get(LaneKey(stages.KindPod, "default", "p")).Cell(stages.Ready); c.State != NotReached {
					t.Errorf("ready is %v after a restart, want not reached", c.State)
				}
			}},
		{"a crash-looping container is never ready", [][]stages.Event{
			{withMessage(retry(ev("", "p", stages.Start, stages.Retrying, 0)), "CrashLoopBackOff", "back-off 10s"),
				ev("", "p", stages.Ready, stages.Succeeded, 1)}},
			func(t *testing.T, s *Store) {
				l := s.Get(LaneKey(stages.KindPod, "default", "p"))
				if c := l.Cell(stages.Ready); c.State == Done {
					t.Error("a crash-looping container is drawn ready")
				}
				if l.Status != "CrashLoopBackOff" {
					t.Errorf("status %q, want CrashLoopBackOff", l.Status)
				}
			}},
		{"attempts match kubectl's RESTARTS", [][]stages.Event{{attempt(retry(ev("", "p", stages.Start, stages.Retrying, 0)), 4)}},
			func(t *testing.T, s *Store) {
				if n := s.Get(LaneKey(stages.KindPod, "default", "p")).Restarts(); n != 3 {
					t.Errorf("RESTARTS %d after 4 start attempts, want 3", n)
				}
			}},
		{"a pod held before the kubelet stage reads Pending", [][]stages.Event{
			{ev("", "p", stages.Bind, stages.Succeeded, 0), withMessage(ev("", "p", stages.Kubelet, stages.Waiting, 1), "Breakpoint", "held before kubelet")}},
			func(t *testing.T, s *Store) {
				if st := s.Get(LaneKey(stages.KindPod, "default", "p")).Status; st != "Pending" {
					t.Errorf("status %q, want Pending", st)
				}
			}},
		{"a configMap that cannot be mounted reads ContainerCreating", [][]stages.Event{
			{ev("", "p", stages.Bind, stages.Succeeded, 0), withMessage(retry(ev("", "p", stages.Kubelet, stages.Retrying, 1)), "FailedMount",
				`MountVolume.SetUp failed for volume "settings" : configmap "cfg" not found`)}},
			func(t *testing.T, s *Store) {
				l := s.Get(LaneKey(stages.KindPod, "default", "p"))
				if _, m := l.Cause(); l.Status != "ContainerCreating" || m != `configmap "cfg" not found` {
					t.Errorf("status %q cause %q", l.Status, m)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New()
			for _, batch := range tt.events {
				for _, e := range batch {
					s.Fold(e)
				}
				s.Rows()
			}
			tt.check(t, s)
		})
	}
}

func TestCoreMessageKeepsUpstreamWords(t *testing.T) {
	for msg, want := range map[string]string{
		"0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.": "3 Insufficient cpu",
		`MountVolume.SetUp failed for volume "settings" : configmap "cfg" not found`:                                                        `configmap "cfg" not found`,
		`Failed to pull image "x": rpc error: code = NotFound desc = x: not found`:                                                          `Failed to pull image "x": x: not found`,
		"Back-off pulling image \"x\"": "Back-off pulling image \"x\"",
	} {
		if got := CoreMessage("", msg); got != want {
			t.Errorf("CoreMessage(%q) = %q, want %q", msg, got, want)
		}
	}
}
