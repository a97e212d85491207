package clock

import (
	"slices"
	"testing"
	"time"

	kclock "k8s.io/utils/clock"
)

func TestWaits(t *testing.T) {
	c, t0 := paused()
	heartbeat := c.NewTicker(10 * time.Second) // housekeeping, unlabelled
	defer heartbeat.Stop()
	pull := LabeledTimer(c, 40*time.Second, "Back-off pulling image \"ngnix\"")
	crash := LabeledAfterFunc(c, 20*time.Second, "Back-off restarting failed container app", func() {})
	c.NewTimerLabeled(5*time.Minute, "late")

	want := []Wait{
		{"Back-off restarting failed container app", t0.Add(20 * time.Second)},
		{"Back-off pulling image \"ngnix\"", t0.Add(40 * time.Second)},
		{"late", t0.Add(5 * time.Minute)},
	}
	if got := c.Waits(); !slices.Equal(got, want) {
		t.Fatalf("Waits() = %v, want %v", got, want)
	}
	if d, _ := c.FastForward(); d != 10*time.Second {
		t.Errorf("FastForward() jumped %v, want the 10s heartbeat", d)
	}
	w, d, ok := c.FastForwardWait()
	if !ok || w != want[0] || d != 10*time.Second {
		t.Errorf("FastForwardWait() = %v, %v, %v; want %v, 10s, true", w, d, ok, want[0])
	}
	crash.Stop()
	pull.Stop()
	w, d, ok = c.FastForwardWait()
	if !ok || w.Label != "late" || d != 5*time.Minute-20*time.Second {
		t.Errorf("FastForwardWait() = %v, %v, %v; want late after 4m40s", w, d, ok)
	}
	if len(c.Waits()) != 0 {
		t.Errorf("Waits() = %v after all fired or stopped", c.Waits())
	}
	if _, _, ok := c.FastForwardWait(); ok {
		t.Error("FastForwardWait() ok with no labelled wait (only the heartbeat)")
	}
}

func TestLabeledFallsBackOnOtherClocks(t *testing.T) {
	var real kclock.RealClock
	tm := LabeledTimer(real, time.Millisecond, "x")
	recv(t, tm.C(), 5*time.Second, "LabeledTimer on RealClock")
	done := make(chan time.Time, 1)
	LabeledAfterFunc(real, time.Millisecond, "x", func() { done <- time.Now() })
	recv(t, done, 5*time.Second, "LabeledAfterFunc on RealClock")
}
