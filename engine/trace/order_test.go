package trace

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/podtrace/podtrace/stages"
)

// ev is a pod event written "pod stage status", or "kind:name stage status"
// for another kind of object.
func ev(s string) stages.Event {
	f := strings.Fields(s)
	e := stages.Event{Namespace: "d", Pod: f[0], Stage: stages.ID(f[1]), Status: stages.Status(f[2])}
	if kind, name, ok := strings.Cut(f[0], ":"); ok {
		e.Kind, e.Pod = kind, name
	}
	return e
}

func describe(e stages.Event) string {
	name := e.Pod
	if e.Kind != "" && e.Kind != stages.KindPod {
		name = e.Kind + ":" + e.Pod
	}
	return fmt.Sprintf("%s %s %s", name, e.Stage, e.Status)
}

// TestReadersGetEachPodInCausalOrder emits events as the components race
// to report them and checks the order a reader gets them in.
func TestReadersGetEachPodInCausalOrder(t *testing.T) {
	for _, tt := range []struct {
		name       string
		emit, want []string
	}{{
		name: "schedule waits for persist's end",
		emit: []string{"p persist started", "p schedule started", "p schedule succeeded", "p persist succeeded"},
		want: []string{"p persist started", "p persist succeeded", "p schedule started", "p schedule succeeded"},
	}, {
		name: "a controller's pod: schedule waits for reconcile's end too",
		emit: []string{"p reconcile started", "p persist started", "p persist succeeded", "p schedule started",
			"p reconcile succeeded"},
		want: []string{"p reconcile started", "p persist started", "p persist succeeded", "p reconcile succeeded",
			"p schedule started"},
	}, {
		name: "kubelet waits for bind's end; its later stages stay behind it",
		emit: []string{"p schedule started", "p schedule succeeded", "p bind started", "p kubelet started",
			"p sandbox started", "p bind succeeded"},
		want: []string{"p schedule started", "p schedule succeeded", "p bind started", "p bind succeeded",
			"p kubelet started", "p sandbox started"},
	}, {
		name: "a failed bind ends it too",
		emit: []string{"p schedule succeeded", "p bind started", "p kubelet started", "p bind failed"},
		want: []string{"p schedule succeeded", "p bind started", "p bind failed", "p kubelet started"},
	}, {
		name: "other pods and objects are not held",
		emit: []string{"a persist started", "a schedule started", "b sandbox started", "ReplicaSet:rs reconcile succeeded",
			"a persist succeeded"},
		want: []string{"a persist started", "b sandbox started", "ReplicaSet:rs reconcile succeeded", "a persist succeeded",
			"a schedule started"},
	}, {
		name: "a pod created before the reader listened is not held",
		emit: []string{"p schedule started", "p schedule succeeded", "p bind succeeded", "p kubelet started"},
		want: []string{"p schedule started", "p schedule succeeded", "p bind succeeded", "p kubelet started"},
	}, {
		name: "a pod the scheduler never saw is not held",
		emit: []string{"p persist started", "p persist succeeded", "p kubelet started"},
		want: []string{"p persist started", "p persist succeeded", "p kubelet started"},
	}, {
		name: "a deleted pod is forgotten: its namesake is new",
		emit: []string{"p persist started", "p persist succeeded", "p delete succeeded", "p schedule started"},
		want: []string{"p persist started", "p persist succeeded", "p delete succeeded", "p schedule started"},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			hub := NewHub()
			hub.settle = time.Hour // only the predecessors' ends release
			rec := hub.Record()
			defer rec.Stop()
			for _, s := range tt.emit {
				hub.Emit(ev(s))
			}
			got := waitEvents(t, rec, len(tt.want))
			var lines []string
			for _, e := range got {
				lines = append(lines, describe(e))
			}
			if g, w := strings.Join(lines, "\n"), strings.Join(tt.want, "\n"); g != w {
				t.Errorf("a reader got\n%s\nwant\n%s", g, w)
			}
		})
	}
}

// TestSettleBoundsTheHold holds a schedule whose persist never reports its
// end: the reader gets it once the settle window has passed, and counts it
// as pending meanwhile.
func TestSettleBoundsTheHold(t *testing.T) {
	const settle = 200 * time.Millisecond
	hub := NewHub()
	hub.settle = settle
	sub := hub.Subscribe()
	defer sub.Close()
	start := time.Now()
	hub.Emit(ev("p persist started"))
	hub.Emit(ev("p schedule started"))
	if e := <-sub.C(); e.Stage != stages.Persist {
		t.Fatalf("first event %s, want persist's start", describe(e))
	}
	// The sender counts an event as received just after the channel has
	// handed it over, so the count catches up within microseconds; the
	// held schedule is released only after the settle window.
	n := sub.Pending()
	for n != 1 && time.Since(start) < settle/2 {
		time.Sleep(time.Millisecond)
		n = sub.Pending()
	}
	if n != 1 {
		t.Errorf("Pending() = %d while schedule is held, want 1", n)
	}
	hub.Emit(ev("q schedule started")) // another pod goes on meanwhile
	if e := <-sub.C(); e.Pod != "q" {
		t.Fatalf("got %s, want pod q's event before the held one", describe(e))
	}
	select {
	case e := <-sub.C():
		if held := time.Since(start); e.Stage != stages.Schedule || held < settle {
			t.Fatalf("got %s after %s, want schedule after at least %s", describe(e), held, settle)
		}
	case <-time.After(10 * settle):
		t.Fatalf("schedule still held after %s, the window is %s", 10*settle, settle)
	}
	n = sub.Pending()
	for wait := time.Now(); n != 0 && time.Since(wait) < settle; n = sub.Pending() {
		time.Sleep(time.Millisecond) // the sender's count catches up
	}
	if n != 0 {
		t.Errorf("Pending() = %d once everything was received, want 0", n)
	}
}

// TestGateNeverWaitsForAnotherComponent gates the stages that follow
// another component's (schedule after persist and reconcile, kubelet after
// bind) while those have begun and not ended: the gates open at once, and
// the reader still gets the stages in order.
func TestGateNeverWaitsForAnotherComponent(t *testing.T) {
	tr, rec := newTracer()
	ref := Ref{Kind: stages.KindPod, Namespace: "d", Name: "p"}
	reconcile := tr.Begin(ref, stages.Reconcile, "replicaset-controller")
	persist := tr.Begin(ref, stages.Persist, "kube-apiserver")
	bind := tr.Begin(ref, stages.Bind, "default-scheduler")
	for _, s := range []stages.ID{stages.Schedule, stages.Kubelet} {
		gated := make(chan struct{})
		go func() {
			tr.Gate(context.Background(), ref, s, "test")
			close(gated)
		}()
		select {
		case <-gated:
		case <-time.After(500 * time.Millisecond):
			t.Fatalf("the %s gate waits for another component's stage", s)
		}
		tr.Begin(ref, s, "test")
	}
	persist.Succeed("", "")
	reconcile.Succeed("", "")
	bind.Succeed("", "")
	var got []string
	for _, e := range waitEvents(t, rec, 8) {
		got = append(got, describe(e))
	}
	want := []string{"p reconcile started", "p persist started", "p bind started", "p persist succeeded",
		"p reconcile succeeded", "p schedule started", "p bind succeeded", "p kubelet started"}
	if g, w := strings.Join(got, ", "), strings.Join(want, ", "); g != w {
		t.Errorf("a reader got\n%s\nwant\n%s", g, w)
	}
}

// TestSettledEventLetsEarlierStagesGoFirst lets the settle window pass for
// a schedule and the kubelet stage held behind it, with bind's end held
// behind them too: the schedule goes, then bind's end, then the kubelet.
func TestSettledEventLetsEarlierStagesGoFirst(t *testing.T) {
	c := newCausal(time.Second)
	t0 := time.Unix(1000, 0)
	var out []stages.Event
	for _, s := range []string{"p reconcile started", "p persist started", "p persist succeeded", "p schedule started",
		"p kubelet started", "p bind succeeded"} {
		out = c.add(ev(s), t0, out)
	}
	if len(out) != 3 {
		t.Fatalf("%d events passed at once, want reconcile's and persist's 3", len(out))
	}
	if at, ok := c.next(); !ok || !at.Equal(t0.Add(time.Second)) {
		t.Fatalf("next() = %v, %v; want %v", at, ok, t0.Add(time.Second))
	}
	if out = c.expire(t0.Add(999*time.Millisecond), out[:0]); len(out) != 0 {
		t.Fatalf("%d events passed before the window ended", len(out))
	}
	var got []string
	for _, e := range c.expire(t0.Add(time.Second), out[:0]) {
		got = append(got, describe(e))
	}
	if g, w := strings.Join(got, ", "), "p schedule started, p bind succeeded, p kubelet started"; g != w {
		t.Errorf("after the window: %s, want %s", g, w)
	}
	if _, ok := c.next(); ok || len(c.waiting) != 0 {
		t.Errorf("events still held: %v", c.waiting)
	}
}
