package model

import (
	"hash/fnv"
	"math"
	"time"
)

// Latency is the simulated runtime's timing model, at speed 1: a Runtime
// divides each duration by its speed when it waits.
type Latency struct {
	Sandbox, Create, Start, Stop, Remove time.Duration
	// PullBase is the fixed cost of a pull (resolve, manifest); PullBytesPerSec the download rate.
	PullBase        time.Duration
	PullBytesPerSec float64
	// Jitter spreads each duration by ±Jitter/2 (0.2 means ±10%).
	Jitter float64
}

// DefaultLatency is the model from the issue: sandbox about 0.4 s, create
// about 0.1 s, start about 30 ms, pulls at 25 MB/s after a 0.3 s resolve.
var DefaultLatency = Latency{
	Sandbox: 400 * time.Millisecond, Create: 100 * time.Millisecond, Start: 30 * time.Millisecond,
	Stop: 50 * time.Millisecond, Remove: 20 * time.Millisecond,
	PullBase: 300 * time.Millisecond, PullBytesPerSec: 25e6, Jitter: 0.2,
}

// model turns operations into durations. Durations depend only on the seed
// and the operation's key (say "create/default/web-1/app/0"), never on the
// order calls arrive in, so one seed repeats a run exactly even though pods
// run concurrently.
type model struct {
	Latency
	seed  int64
	speed func() float64 // nil: 1
}

// factor returns a deterministic value in [1-Jitter/2, 1+Jitter/2) for key.
func (m model) factor(key string) float64 {
	if m.Jitter == 0 {
		return 1
	}
	h := fnv.New64a()
	var b [8]byte
	for i := 0; i < 8; i++ {
		b[i] = byte(m.seed >> (8 * i))
	}
	h.Write(b[:])
	h.Write([]byte(key))
	u := float64(h.Sum64()>>11) / float64(uint64(1)<<53)
	return 1 + m.Jitter*(u-0.5)
}

func (m model) scale(d time.Duration, key string) time.Duration {
	if d <= 0 {
		return 0
	}
	f := m.factor(key)
	if m.speed != nil {
		if s := m.speed(); s > 0 {
			f /= s
		}
	}
	return time.Duration(math.Round(float64(d) * f))
}

// pull returns how long pulling size bytes takes.
func (m model) pull(size int64, key string) time.Duration {
	d := m.PullBase
	if m.PullBytesPerSec > 0 {
		d += time.Duration(float64(size) / m.PullBytesPerSec * float64(time.Second))
	}
	if m.PullBase == 0 && m.PullBytesPerSec == 0 {
		return 0
	}
	return m.scale(d, key)
}
