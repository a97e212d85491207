package clock

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestManyTimersFireInDeadlineOrder(t *testing.T) {
	c, t0 := paused()
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 500
	waits := make([]time.Duration, n)
	chans := make(map[time.Duration]<-chan time.Time, n)
	for i := range waits {
		for {
			d := time.Duration(rng.IntN(3600)+1) * time.Second
			if _, dup := chans[d]; !dup {
				waits[i] = d
				chans[d] = c.After(d)
				break
			}
		}
	}
	slices.Sort(waits)
	for _, d := range waits {
		if _, ok := c.FastForward(); !ok {
			t.Fatalf("FastForward() found nothing before the %v timer fired", d)
		}
		select {
		case v := <-chans[d]:
			if want := t0.Add(d); !v.Equal(want) {
				t.Fatalf("%v timer sent %v, want %v", d, v, want)
			}
		default:
			t.Fatalf("FastForward() to %v did not fire the %v timer", c.Now(), d)
		}
	}
	if n := c.Pending(); n != 0 {
		t.Errorf("Pending() = %d after all fired", n)
	}
}

// TestManyTimersRunning checks that timers on a fast running clock fire, and
// never before their deadline.
func TestManyTimersRunning(t *testing.T) {
	c := New(start, 100000) // 1 s of virtual time is 10 µs of real time
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 2000
	var wg sync.WaitGroup
	var early atomic.Int32
	for range n {
		d := time.Duration(rng.IntN(10000)) * time.Millisecond
		deadline := c.Now().Add(d)
		tm := c.NewTimer(d)
		wg.Go(func() {
			if v := <-tm.C(); v.Before(deadline) || c.Now().Before(deadline) {
				early.Add(1)
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("timers still pending after 10 s of real time: %d", c.Pending())
	}
	if e := early.Load(); e > 0 {
		t.Errorf("%d of %d timers fired before their deadline", e, n)
	}
}

func TestTimerStopReset(t *testing.T) {
	// Expectations are those of time.Timer in Go 1.23 and later.
	tests := []struct {
		name string
		run  func(c *Clock) (got, want []bool)
	}{
		{"stop pending", func(c *Clock) ([]bool, []bool) {
			tm := c.NewTimer(time.Second)
			return []bool{tm.Stop(), tm.Stop()}, []bool{true, false}
		}},
		{"stop fired, value not received", func(c *Clock) ([]bool, []bool) {
			tm := c.NewTimer(time.Second)
			_ = c.Advance(time.Second)
			return []bool{tm.Stop(), stale(tm.C())}, []bool{true, false}
		}},
		{"stop fired and received", func(c *Clock) ([]bool, []bool) {
			tm := c.NewTimer(time.Second)
			_ = c.Advance(time.Second)
			<-tm.C()
			return []bool{tm.Stop()}, []bool{false}
		}},
		{"stop zero timer", func(c *Clock) ([]bool, []bool) {
			tm := c.NewTimer(0)
			return []bool{tm.Stop(), stale(tm.C())}, []bool{true, false}
		}},
		{"reset pending moves the deadline", func(c *Clock) ([]bool, []bool) {
			tm := c.NewTimer(time.Second)
			r := tm.Reset(time.Minute)
			_ = c.Advance(30 * time.Second)
			early := stale(tm.C())
			_ = c.Advance(30 * time.Second)
			return []bool{r, early, stale(tm.C())}, []bool{true, false, true}
		}},
		{"reset fired drops the stale value", func(c *Clock) ([]bool, []bool) {
			tm := c.NewTimer(time.Second)
			_ = c.Advance(time.Second)
			r := tm.Reset(time.Minute)
			return []bool{r, stale(tm.C())}, []bool{true, false}
		}},
		{"reset stopped re-arms", func(c *Clock) ([]bool, []bool) {
			tm := c.NewTimer(time.Second)
			tm.Stop()
			r := tm.Reset(time.Second)
			_ = c.Advance(time.Second)
			return []bool{r, stale(tm.C())}, []bool{false, true}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := paused()
			got, want := tt.run(c)
			if !slices.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
			if n := c.Pending(); n > 1 {
				t.Errorf("Pending() = %d, timers leaked", n)
			}
		})
	}
}

// stale reports whether a value is waiting on ch, consuming it.
func stale(ch <-chan time.Time) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestAfterFunc(t *testing.T) {
	c, t0 := paused()
	ran := make(chan time.Time, 3)
	f := func() { ran <- c.Now() }

	tm := c.AfterFunc(time.Minute, f)
	if tm.C() != nil {
		t.Error("AfterFunc timer has a channel")
	}
	quiet(t, ran, 10*time.Millisecond, "AfterFunc before its time")
	if d, _ := c.FastForward(); d != time.Minute {
		t.Errorf("FastForward() jumped %v, want 1m", d)
	}
	if v := recv(t, ran, time.Second, "AfterFunc after FastForward"); !v.Equal(t0.Add(time.Minute)) {
		t.Errorf("f saw Now() = %v, want %v", v, t0.Add(time.Minute))
	}
	if tm.Stop() {
		t.Error("Stop() = true after f ran")
	}
	if tm.Reset(time.Second) {
		t.Error("Reset() = true after f ran")
	}
	_ = c.Advance(time.Second)
	recv(t, ran, time.Second, "AfterFunc after Reset")

	stopped := c.AfterFunc(time.Second, f)
	if !stopped.Stop() {
		t.Error("Stop() = false for a pending AfterFunc")
	}
	_ = c.Advance(time.Hour)
	quiet(t, ran, 20*time.Millisecond, "stopped AfterFunc")
}

func TestTicker(t *testing.T) {
	c, t0 := paused()
	const p = 10 * time.Second
	tk := c.NewTicker(p)
	for i := 1; i <= 3; i++ {
		_ = c.Advance(p)
		if v := recv(t, tk.C(), time.Second, "tick"); !v.Equal(t0.Add(time.Duration(i) * p)) {
			t.Errorf("tick %d at %v, want %v", i, v, t0.Add(time.Duration(i)*p))
		}
	}
	// A receiver that falls behind loses ticks: the channel holds one.
	for range 3 {
		_ = c.Advance(p)
	}
	recv(t, tk.C(), time.Second, "tick after three periods")
	quiet(t, tk.C(), 10*time.Millisecond, "second buffered tick")
	// A jump over several periods ticks once and keeps the phase.
	_ = c.Advance(3*p + p/2)
	recv(t, tk.C(), time.Second, "tick after a long jump")
	quiet(t, tk.C(), 10*time.Millisecond, "extra tick after a long jump")
	if next, _ := c.NextDeadline(); !next.Equal(t0.Add(10 * p)) {
		t.Errorf("next tick at %v, want %v", next, t0.Add(10*p))
	}
	// Stop drops a pending tick and no more arrive.
	_ = c.Advance(p)
	tk.Stop()
	if stale(tk.C()) {
		t.Error("a tick was received after Stop")
	}
	_ = c.Advance(5 * p)
	quiet(t, tk.C(), 10*time.Millisecond, "stopped ticker")
	if n := c.Pending(); n != 0 {
		t.Errorf("Pending() = %d after Stop", n)
	}
}

func TestTickerRunning(t *testing.T) {
	c := New(start, 10000) // a 1 s period is 100 µs of real time
	ch := c.Tick(time.Second)
	prev := start
	for i := 1; i <= 5; i++ {
		v := recv(t, ch, 5*time.Second, "tick")
		// Ticks may be dropped for a slow receiver, never early.
		if !v.After(prev) || v.Before(start.Add(time.Duration(i)*time.Second)) {
			t.Errorf("tick %d at %v (previous %v), want after both and at least %v", i, v, prev, start.Add(time.Duration(i)*time.Second))
		}
		prev = v
	}
	if c.Tick(0) != nil {
		t.Error("Tick(0) != nil")
	}
	defer func() {
		if recover() == nil {
			t.Error("NewTicker(0) did not panic")
		}
	}()
	c.NewTicker(0)
}

func TestSleep(t *testing.T) {
	c := New(start, 100000)
	r0 := time.Now()
	c.Sleep(time.Minute) // 600 µs of real time
	if c.Since(start) < time.Minute {
		t.Errorf("Sleep(1m) returned at %v", c.Since(start))
	}
	if took := time.Since(r0); took > 5*time.Second {
		t.Errorf("Sleep(1m) at ×100000 took %v of real time", took)
	}
	c.Sleep(0)
	c.Sleep(-time.Second)
}

// TestSleepingTimersCostNoGoroutines checks that pending timers do not each
// hold a goroutine.
func TestSleepingTimersCostNoGoroutines(t *testing.T) {
	c := New(start, 1)
	before := runtime.NumGoroutine()
	timers := make([]interface{ Stop() bool }, 0, 10000)
	for i := range 10000 {
		if i%2 == 0 {
			timers = append(timers, c.NewTimer(time.Hour+time.Duration(i)))
		} else {
			timers = append(timers, c.AfterFunc(time.Hour+time.Duration(i), func() {}))
		}
	}
	if after := runtime.NumGoroutine(); after-before > 5 {
		t.Errorf("10,000 pending timers added %d goroutines", after-before)
	}
	for _, tm := range timers {
		if !tm.Stop() {
			t.Fatal("Stop() = false for a pending timer")
		}
	}
	if n := c.Pending(); n != 0 {
		t.Errorf("Pending() = %d after stopping all", n)
	}
}
