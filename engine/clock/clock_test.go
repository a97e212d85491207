package clock

import (
	"errors"
	"math"
	"sync"
	"testing"
	"time"
)

var start = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// recv waits up to real d for a value on ch.
func recv(t *testing.T, ch <-chan time.Time, d time.Duration, what string) time.Time {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("%s: nothing received within %v of real time", what, d)
		return time.Time{}
	}
}

// quiet checks that nothing arrives on ch for real d.
func quiet(t *testing.T, ch <-chan time.Time, d time.Duration, what string) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("%s: received %v, want nothing", what, v)
	case <-time.After(d):
	}
}

// paused returns a paused clock at speed 1 and the instant it stands at.
func paused() (*Clock, time.Time) {
	c := New(start, 1)
	c.Pause()
	return c, c.Now()
}

func TestNowRunsAtSpeed(t *testing.T) {
	for _, speed := range []float64{1, 0.25, 64, 1000} {
		r0 := time.Now()
		c := New(start, speed)
		time.Sleep(5 * time.Millisecond)
		v := c.Now().Sub(start)
		real := time.Since(r0)
		// Virtual elapsed lies between speed × the real time slept and
		// speed × the real time since just before New.
		if lo := scale(5*time.Millisecond, speed); v < lo {
			t.Errorf("speed %v: virtual elapsed %v, want at least %v", speed, v, lo)
		}
		if hi := scale(real, speed); v > hi {
			t.Errorf("speed %v: virtual elapsed %v, want at most %v", speed, v, hi)
		}
		if got := c.Since(start); got < v {
			t.Errorf("speed %v: Since(start) = %v went below an earlier Now (%v)", speed, got, v)
		}
	}
}

func TestNowHasNoMonotonicReading(t *testing.T) {
	c := New(time.Now(), 1)
	if n := c.Now(); n != n.Round(0) {
		t.Errorf("Now() = %v carries a monotonic reading", n)
	}
}

func TestSpeedValidation(t *testing.T) {
	tests := []struct {
		speed float64
		ok    bool
	}{
		{1, true}, {0.25, true}, {64, true}, {MinSpeed, true}, {MaxSpeed, true},
		{0, false}, {-1, false}, {math.NaN(), false}, {math.Inf(1), false},
		{MinSpeed / 2, false}, {MaxSpeed * 2, false},
	}
	for _, tt := range tests {
		c := New(start, 2)
		err := c.SetSpeed(tt.speed)
		if (err == nil) != tt.ok {
			t.Errorf("SetSpeed(%v) error = %v, want ok=%v", tt.speed, err, tt.ok)
		}
		want := 2.0
		if tt.ok {
			want = tt.speed
		}
		if got := c.Speed(); got != want {
			t.Errorf("after SetSpeed(%v): Speed() = %v, want %v", tt.speed, got, want)
		}
		func() {
			defer func() {
				if r := recover(); (r == nil) != tt.ok {
					t.Errorf("New(start, %v) panic = %v, want panic %v", tt.speed, r, !tt.ok)
				}
			}()
			New(start, tt.speed)
		}()
	}
}

func TestPauseFreezesNowAndHoldsTimers(t *testing.T) {
	c := New(start, 10000)
	c.Pause()
	if !c.Paused() {
		t.Fatal("Paused() = false after Pause")
	}
	frozen := c.Now()
	tm := c.NewTimer(time.Second) // 100µs of real time if it were running
	quiet(t, tm.C(), 30*time.Millisecond, "1s timer while paused")
	if got := c.Now(); !got.Equal(frozen) {
		t.Errorf("Now moved while paused: %v, then %v", frozen, got)
	}
	if got := c.Pending(); got != 1 {
		t.Errorf("Pending() = %d while paused, want 1", got)
	}
	c.Resume()
	if c.Paused() {
		t.Fatal("Paused() = true after Resume")
	}
	v := recv(t, tm.C(), 5*time.Second, "1s timer after Resume at speed 10000")
	if want := frozen.Add(time.Second); v.Before(want) {
		t.Errorf("timer fired at %v, before its deadline %v", v, want)
	}
}

func TestSpeedChangeMidWait(t *testing.T) {
	tests := []struct {
		name     string
		from, to float64
		wait     time.Duration // virtual
		fires    bool          // within the real time below
		within   time.Duration
	}{
		{"sped up: 10 s at ×1, then ×10000", 1, 10000, 10 * time.Second, true, 5 * time.Second},
		{"5 min back-off at ×60, then ×6000", 60, 6000, 5 * time.Minute, true, 5 * time.Second},
		{"slowed down: 1 s at ×10000, then ×1", 10000, 1, time.Second, false, 50 * time.Millisecond},
		{"slowed down: 1 s at ×10000, then ×1/64", 10000, 1.0 / 64, time.Second, false, 50 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(start, tt.from)
			c.Pause() // so the timer cannot fire before the change
			tm := c.NewTimer(tt.wait)
			deadline := c.Now().Add(tt.wait)
			if err := c.SetSpeed(tt.to); err != nil {
				t.Fatal(err)
			}
			c.Resume()
			if !tt.fires {
				quiet(t, tm.C(), tt.within, "timer after slowing down")
				if !tm.Stop() {
					t.Error("Stop() = false for a timer still pending")
				}
				return
			}
			if v := recv(t, tm.C(), tt.within, "timer after speeding up"); v.Before(deadline) {
				t.Errorf("fired at %v, before deadline %v", v, deadline)
			}
		})
	}
}

func TestRealWaitIsScaled(t *testing.T) {
	tests := []struct {
		speed float64
		wait  time.Duration // virtual
		real  time.Duration // wait / speed
	}{
		{6000, 5 * time.Minute, 50 * time.Millisecond},
		{1, 20 * time.Millisecond, 20 * time.Millisecond},
		{0.25, 5 * time.Millisecond, 20 * time.Millisecond},
	}
	for _, tt := range tests {
		c := New(start, tt.speed)
		r0 := time.Now()
		recv(t, c.After(tt.wait), 5*time.Second, "timer")
		if took := time.Since(r0); took < tt.real {
			t.Errorf("%v at ×%v fired after %v of real time, want at least %v", tt.wait, tt.speed, took, tt.real)
		}
	}
}

func TestSpeedChangeWhileRunning(t *testing.T) {
	c := New(start, 1)
	tm := c.NewTimer(time.Hour)
	time.Sleep(2 * time.Millisecond)
	if err := c.SetSpeed(MaxSpeed); err != nil { // an hour is 3.4 ms of real time
		t.Fatal(err)
	}
	if v := recv(t, tm.C(), 5*time.Second, "1h timer at max speed"); v.Before(start.Add(time.Hour)) {
		t.Errorf("fired at %v, before its deadline", v)
	}
}

func TestFastForward(t *testing.T) {
	c, now := paused()
	if _, ok := c.FastForward(); ok {
		t.Fatal("FastForward() ok with no timer pending")
	}
	waits := []time.Duration{5 * time.Minute, 10 * time.Second, time.Minute, 10 * time.Second}
	timers := make([]<-chan time.Time, len(waits))
	for i, d := range waits {
		timers[i] = c.After(d)
	}
	steps := []struct {
		jump  time.Duration
		fired []int // indexes into waits that fire at this step
	}{
		{10 * time.Second, []int{1, 3}},
		{50 * time.Second, []int{2}},
		{4 * time.Minute, []int{0}},
	}
	for _, st := range steps {
		next, ok := c.NextDeadline()
		if !ok || !next.Equal(now.Add(st.jump)) {
			t.Fatalf("NextDeadline() = %v, %v; want %v", next, ok, now.Add(st.jump))
		}
		got, ok := c.FastForward()
		if !ok || got != st.jump {
			t.Fatalf("FastForward() = %v, %v; want %v, true", got, ok, st.jump)
		}
		now = now.Add(st.jump)
		if !c.Now().Equal(now) {
			t.Errorf("Now() = %v after FastForward, want %v", c.Now(), now)
		}
		for _, i := range st.fired {
			if v := recv(t, timers[i], time.Second, "timer due after FastForward"); !v.Equal(now) {
				t.Errorf("timer %d sent %v, want %v", i, v, now)
			}
		}
		for i := range timers {
			select {
			case v := <-timers[i]:
				t.Errorf("timer %d (%v) fired at %v too early", i, waits[i], v)
			default:
			}
		}
	}
	if !c.Paused() {
		t.Error("FastForward resumed a paused clock")
	}
	if n := c.Pending(); n != 0 {
		t.Errorf("Pending() = %d after all fired, want 0", n)
	}
	if _, ok := c.NextDeadline(); ok {
		t.Error("NextDeadline() ok with nothing pending")
	}
}

func TestFastForwardRunningClock(t *testing.T) {
	c := New(start, 1)
	tm := c.NewTimer(5 * time.Minute)
	d, ok := c.FastForward()
	if !ok || d > 5*time.Minute || d < 5*time.Minute-time.Second {
		t.Fatalf("FastForward() = %v, %v; want just under 5m", d, ok)
	}
	recv(t, tm.C(), time.Second, "5m timer after FastForward")
	if c.Now().Before(start.Add(5 * time.Minute)) {
		t.Errorf("Now() = %v, before the fired deadline", c.Now())
	}
}

func TestAdvance(t *testing.T) {
	c, t0 := paused()
	a, b, later := c.After(time.Second), c.After(2*time.Second), c.After(time.Hour)
	if err := c.Advance(-time.Second); !errors.Is(err, ErrNegative) {
		t.Errorf("Advance(-1s) = %v, want ErrNegative", err)
	}
	if err := c.Advance(3 * time.Second); err != nil {
		t.Fatal(err)
	}
	if want := t0.Add(3 * time.Second); !c.Now().Equal(want) {
		t.Errorf("Now() = %v, want %v", c.Now(), want)
	}
	recv(t, a, time.Second, "1s timer")
	recv(t, b, time.Second, "2s timer")
	quiet(t, later, 10*time.Millisecond, "1h timer")
}

func TestChanged(t *testing.T) {
	c := New(start, 1)
	tests := []struct {
		name    string
		do      func()
		changed bool
	}{
		{"same speed", func() { _ = c.SetSpeed(1) }, false},
		{"new speed", func() { _ = c.SetSpeed(4) }, true},
		{"bad speed", func() { _ = c.SetSpeed(0) }, false},
		{"pause", c.Pause, true},
		{"pause again", c.Pause, false},
		{"resume", c.Resume, true},
		{"advance", func() { _ = c.Advance(time.Second) }, true},
		{"timer fires by itself", func() { <-c.After(0) }, false},
	}
	for _, tt := range tests {
		ch := c.Changed()
		tt.do()
		select {
		case <-ch:
			if !tt.changed {
				t.Errorf("%s: Changed() closed", tt.name)
			}
		default:
			if tt.changed {
				t.Errorf("%s: Changed() not closed", tt.name)
			}
		}
	}
	if s := c.State(); s.Speed != 4 || s.Paused || s.Now.Before(start.Add(time.Second)) {
		t.Errorf("State() = %+v, want speed 4, running, at least 1s past start", s)
	}
}

// TestNowMonotonic hammers Now while speed, pause and jumps change.
func TestNowMonotonic(t *testing.T) {
	c := New(start, 1)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := c.Now()
			for {
				select {
				case <-stop:
					return
				default:
				}
				n := c.Now()
				if n.Before(last) {
					t.Errorf("Now went back from %v to %v", last, n)
					return
				}
				last = n
			}
		}()
	}
	for i := range 200 {
		_ = c.SetSpeed([]float64{64, 0.25, 1000, 1}[i%4])
		if i%10 == 0 {
			c.Pause()
			_ = c.Advance(time.Millisecond)
			c.Resume()
		}
	}
	close(stop)
	wg.Wait()
}
