package trace

import (
	"context"
	"fmt"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podtrace/podtrace/internal/waittest"
	"github.com/podtrace/podtrace/stages"
)

func newTracer() (*Tracer, *Recording) {
	hub := NewHub()
	rec := hub.Record()
	return New(clocktesting.NewFakeClock(time.Unix(1000, 0)), hub), rec
}

func waitEvents(t *testing.T, rec *Recording, n int) []stages.Event {
	t.Helper()
	waittest.EventuallyEvery(t, fmt.Sprintf("%d events", n), time.Millisecond, 5*time.Second, func() (bool, string) {
		got := len(rec.Events())
		return got >= n, fmt.Sprintf("%d events", got)
	})
	return rec.Events()
}

func TestHubNeverBlocksAndKeepsOrder(t *testing.T) {
	hub := NewHub()
	slow := hub.Subscribe() // nobody reads it while we emit
	defer slow.Close()
	rec := hub.Record()
	for i := 0; i < 10000; i++ {
		hub.Emit(stages.Event{Attempt: i})
	}
	evs := waitEvents(t, rec, 10000)
	for i, e := range evs {
		if e.Attempt != i {
			t.Fatalf("event %d arrived as %d", i, e.Attempt)
		}
	}
	if slow.Pending() != 10000 {
		t.Fatalf("unread subscription holds %d, want 10000", slow.Pending())
	}
}

func TestSpanDurationsAndKinds(t *testing.T) {
	tr, rec := newTracer()
	clk := tr.Clock().(*clocktesting.FakeClock)
	span := tr.Begin(Ref{Namespace: "ns", Name: "p"}, stages.Pull, "kubelet")
	clk.Step(1500 * time.Millisecond)
	span.Retry("BackOff", "Back-off pulling image", clk.Now().Add(10*time.Second))
	evs := waitEvents(t, rec, 2)
	if evs[0].Status != stages.Started || evs[0].Kind != stages.KindPod {
		t.Fatalf("first event %+v", evs[0])
	}
	if e := evs[1]; e.Status != stages.Retrying || e.DurationMs != 1500 || e.NextTry == nil || !e.NextTry.Equal(time.Unix(1011, 500e6)) {
		t.Fatalf("retry event %+v", e)
	}
}

func TestGateFaults(t *testing.T) {
	tr, _ := newTracer()
	ctx := context.Background()
	ref := Ref{Namespace: "default", Name: "web", Node: "node-1"}
	f := tr.Faults.Add(stages.Fault{Stage: stages.Pull, Kind: stages.Flake, Count: 2, Variant: "not-found"})
	for i := 0; i < 2; i++ {
		got, err := tr.Gate(ctx, ref, stages.Pull, "kubelet")
		if err != nil || got == nil || got.Variant != "not-found" || got.ID != f.ID {
			t.Fatalf("attempt %d: %+v %v", i, got, err)
		}
	}
	if got, _ := tr.Gate(ctx, ref, stages.Pull, "kubelet"); got != nil || len(tr.Faults.List()) != 0 {
		t.Fatalf("flake must be spent after 2 attempts: %+v %v", got, tr.Faults.List())
	}
	other := tr.Faults.Add(stages.Fault{Stage: stages.Pull, Kind: stages.Fail, Scope: stages.Scope{Node: "node-2"}})
	if got, _ := tr.Gate(ctx, ref, stages.Pull, "kubelet"); got != nil {
		t.Fatalf("a node-2 fault hit a pod on node-1")
	}
	tr.Faults.Remove(other.ID)
}

// TestPauseHoldsEveryGate pauses the gates: a stage that reaches its gate
// is shown waiting with reason Paused and goes on only at Resume.
func TestPauseHoldsEveryGate(t *testing.T) {
	tr, rec := newTracer()
	tr.Pause()
	if !tr.Paused() || !tr.Armed() {
		t.Fatalf("Paused() = %v, Armed() = %v after Pause; want both true", tr.Paused(), tr.Armed())
	}
	done := make(chan error)
	for _, s := range []stages.ID{stages.Admission, stages.Sandbox} {
		go func() {
			_, err := tr.Gate(context.Background(), Ref{Namespace: "d", Name: string(s)}, s, "test")
			done <- err
		}()
	}
	evs := waitEvents(t, rec, 4)
	for _, e := range evs {
		if (e.Status == stages.Waiting) != (e.Reason == "Paused") {
			t.Fatalf("a paused gate's event %+v; want Waiting with reason Paused", e)
		}
	}
	select {
	case <-done:
		t.Fatal("a gate opened while paused")
	case <-time.After(50 * time.Millisecond):
	}
	tr.Resume()
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if tr.Paused() {
		t.Fatal("Paused() after Resume")
	}
	if _, err := tr.Gate(context.Background(), Ref{Namespace: "d", Name: "late"}, stages.Pull, "test"); err != nil {
		t.Fatal(err)
	}
}

// TestGateWaitEndsWithItsFault holds a stage with a hang and with a delay
// (on a fake clock that never moves) and removes the fault, or skips the
// delay (the fast-forward key): the stage, shown waiting meanwhile, goes on
// at once.
func TestGateWaitEndsWithItsFault(t *testing.T) {
	remove := func(tr *Tracer, f stages.Fault) { tr.Faults.Remove(f.ID) }
	skip := func(tr *Tracer, _ stages.Fault) {
		if n := tr.Faults.SkipDelays(); n != 1 {
			t.Errorf("SkipDelays() = %d, want 1", n)
		}
	}
	for _, tt := range []struct {
		fault   stages.Fault
		reason  string
		release func(*Tracer, stages.Fault)
	}{
		{stages.Fault{Stage: stages.CNI, Kind: stages.Hang}, "Hang", remove},
		{stages.Fault{Stage: stages.Pull, Kind: stages.Delay, Delay: time.Hour}, "Delay", remove},
		{stages.Fault{Stage: stages.Pull, Kind: stages.Delay, Delay: time.Hour}, "Delay", skip},
	} {
		tr, rec := newTracer()
		f := tr.Faults.Add(tt.fault)
		done := make(chan error)
		go func() {
			got, err := tr.Gate(context.Background(), Ref{Namespace: "d", Name: "p"}, f.Stage, "kubelet")
			if got != nil {
				err = fmt.Errorf("after release the stage proceeds, got fault %+v", got)
			}
			done <- err
		}()
		if evs := waitEvents(t, rec, 2); evs[1].Status != stages.Waiting || evs[1].Reason != tt.reason {
			t.Fatalf("%s not reported: %+v", f.Kind, evs[1])
		}
		select {
		case <-done:
			t.Fatalf("%s: gate returned while the fault is active", f.Kind)
		case <-time.After(50 * time.Millisecond):
		}
		tt.release(tr, f)
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%s: %v", f.Kind, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: the stage still waits after its fault was removed", f.Kind)
		}
	}
}

func TestBreakpointStepAndContinue(t *testing.T) {
	tr, rec := newTracer()
	tr.Breaks.Set(stages.Breakpoint{Stage: stages.Sandbox, Scope: stages.Scope{Pod: "d/a"}})
	ctx := context.Background()
	a, b := Ref{Namespace: "d", Name: "a"}, Ref{Namespace: "d", Name: "b"}
	if _, err := tr.Gate(ctx, b, stages.Sandbox, "kubelet"); err != nil {
		t.Fatal(err) // other pods are not held
	}
	passed := make(chan stages.ID, 4)
	go func() {
		for _, s := range []stages.ID{stages.Sandbox, stages.CNI, stages.Pull} {
			tr.Gate(ctx, a, s, "kubelet")
			passed <- s
		}
	}()
	waitHeld := func(stage stages.ID) {
		t.Helper()
		waittest.EventuallyEvery(t, fmt.Sprintf("d/a held before %s", stage), time.Millisecond, 5*time.Second, func() (bool, string) {
			h := tr.Breaks.Held()
			return len(h) == 1 && h[0].Pod == "d/a" && h[0].Stage == stage, fmt.Sprintf("held: %+v", h)
		})
	}
	waitHeld(stages.Sandbox)
	tr.Breaks.Step("d/a")
	if s := <-passed; s != stages.Sandbox {
		t.Fatalf("step ran %s", s)
	}
	waitHeld(stages.CNI) // stepping holds before the next stage
	tr.Breaks.Continue("d/a")
	if s1, s2 := <-passed, <-passed; s1 != stages.CNI || s2 != stages.Pull {
		t.Fatalf("continue ran %s, %s", s1, s2)
	}
	waitEvents(t, rec, 1) // the recording reads the hub on a goroutine of its own
}

func TestDelayIsShownWhileItLasts(t *testing.T) {
	tr, rec := newTracer()
	clk := tr.Clock().(*clocktesting.FakeClock)
	tr.Faults.Add(stages.Fault{Stage: stages.Pull, Kind: stages.Delay, Delay: 5 * time.Second})
	done := make(chan struct{})
	go func() {
		tr.Gate(context.Background(), Ref{Namespace: "d", Name: "p"}, stages.Pull, "kubelet")
		close(done)
	}()
	evs := waitEvents(t, rec, 2)
	if evs[1].Status != stages.Waiting || evs[1].Reason != "Delay" {
		t.Fatalf("delay not shown: %+v", evs[1])
	}
	waittest.EventuallyEvery(t, "the delay to wait on the clock", time.Millisecond, time.Minute, func() (bool, string) {
		return clk.HasWaiters(), ""
	})
	clk.Step(5 * time.Second)
	<-done
}

// TestReadySince starts the ready stage when the pod's last other stage
// ended, not at the whole second the API keeps a container's start in.
func TestReadySince(t *testing.T) {
	base := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	tr := New(clocktesting.NewFakeClock(base), nil)
	ref := Ref{Kind: stages.KindPod, Namespace: "default", Name: "web", UID: "u1", Node: "node-1"}
	startedAt := base                            // as the API has it: whole seconds
	hooksEnd := base.Add(840 * time.Millisecond) // the postStart hook ended here
	now := base.Add(900 * time.Millisecond)      // Ready=True written here
	if got := tr.ReadySince(ref, startedAt, now); !got.Equal(startedAt) {
		t.Errorf("with no stage ended: %v, want the container's start %v", got, startedAt)
	}
	tr.Record(ref, stages.Hooks, "kubelet", base.Add(700*time.Millisecond), hooksEnd, stages.Succeeded, "", "", nil)
	if got := tr.ReadySince(ref, startedAt, now); !got.Equal(hooksEnd) {
		t.Errorf("after hooks: %v, want the hooks' end %v", got, hooksEnd)
	}
	if got := tr.ReadySince(ref, time.Time{}, now); !got.Equal(hooksEnd) {
		t.Errorf("with no container start: %v, want %v", got, hooksEnd)
	}
	if got := tr.ReadySince(Ref{Namespace: "default", Name: "other"}, time.Time{}, now); !got.Equal(now) {
		t.Errorf("unknown pod: %v, want now %v", got, now)
	}
}
