package clock

import (
	"testing"
	"time"
)

// BenchmarkTimers10k creates 10,000 timers with spread deadlines on a paused
// clock and fast-forwards through them all: the work of 10,000 pods'
// back-offs, per iteration.
func BenchmarkTimers10k(b *testing.B) {
	const n = 10000
	for b.Loop() {
		c := New(start, 1)
		c.Pause()
		chans := make([]<-chan time.Time, n)
		for i := range chans {
			chans[i] = c.After(time.Duration(i*7919%n+1) * time.Millisecond)
		}
		_ = c.Advance(n * time.Millisecond)
		for _, ch := range chans {
			<-ch
		}
	}
}

// BenchmarkTimers10kRunning lets 10,000 timers spread over 10 s of virtual
// time fire on their own at ×1000 (10 ms of real time).
func BenchmarkTimers10kRunning(b *testing.B) {
	const n = 10000
	for b.Loop() {
		c := New(start, 1000)
		chans := make([]<-chan time.Time, n)
		for i := range chans {
			chans[i] = c.After(time.Duration(i*7919%n+1) * time.Millisecond)
		}
		for _, ch := range chans {
			<-ch
		}
	}
}

// BenchmarkTimerStopWith10kPending is the cost of arming and stopping one
// timer (a probe, a back-off) while 10,000 others sleep.
func BenchmarkTimerStopWith10kPending(b *testing.B) {
	c := New(start, 1)
	for i := range 10000 {
		c.NewTimer(time.Hour + time.Duration(i))
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		c.NewTimer(time.Minute + time.Duration(i%1000)).Stop()
	}
}

// BenchmarkStdlibTimerStop is the standard library's cost for the same
// operation, for comparison.
func BenchmarkStdlibTimerStop(b *testing.B) {
	for i := range 10000 {
		time.NewTimer(time.Hour + time.Duration(i))
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		time.NewTimer(time.Minute + time.Duration(i%1000)).Stop()
	}
}

// BenchmarkNow is the cost of reading the clock.
func BenchmarkNow(b *testing.B) {
	c := New(start, 2)
	for b.Loop() {
		c.Now()
	}
}
