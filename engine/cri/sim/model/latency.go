// Package model is the simulated container runtime's model; the runtime
// (engine/cri/sim) keeps the state, as CRI records, and asks it how long
// each operation takes (Timing: a seeded latency model divided by a live
// speed), which IDs it gives, what a pull finds in the simulated registries
// (Pull, the catalogue) and what a container's command does
// (ParseProgram). It needs no root and runs on any OS.
package model

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"time"

	"k8s.io/utils/clock"
)

// Latency is the simulated runtime's timing model, at speed 1: Timing
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

// Timing turns a runtime's operations into waits on its clock. Durations
// depend only on the seed and the operation's key (say
// "create/default/web-1/app/0"), never on the order calls arrive in, so
// one seed repeats a run exactly even though pods run concurrently.
type Timing struct {
	Latency
	// Clock drives every wait.
	Clock clock.WithTicker
	// Seed makes durations and IDs repeatable.
	Seed int64
	// Speed, when set, divides each duration as it is waited (2 = twice
	// as fast), read at every wait so a change applies at once.
	Speed func() float64
}

// Sleep waits d on the clock, or returns ctx's error.
func (m Timing) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := m.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Take waits what an operation of duration d and key takes at the
// current speed.
func (m Timing) Take(ctx context.Context, d time.Duration, key string) error {
	return m.Sleep(ctx, m.Scale(d, key))
}

// ID is the ID of node's object of kind (sandbox, container) and key: the
// same seed, node and key give the same ID.
func (m Timing) ID(node, kind, key string) string {
	return digestOf(fmt.Sprintf("%d/%s/%s/%s", m.Seed, node, kind, key))[len("sha256:"):]
}

// factor returns a deterministic value in [1-Jitter/2, 1+Jitter/2) for key.
func (m Timing) factor(key string) float64 {
	if m.Jitter == 0 {
		return 1
	}
	h := fnv.New64a()
	var b [8]byte
	for i := 0; i < 8; i++ {
		b[i] = byte(m.Seed >> (8 * i))
	}
	h.Write(b[:])
	h.Write([]byte(key))
	u := float64(h.Sum64()>>11) / float64(uint64(1)<<53)
	return 1 + m.Jitter*(u-0.5)
}

// Scale is how long an operation of duration d (at speed 1) and key
// takes: d spread by the key's jitter, divided by the current speed.
func (m Timing) Scale(d time.Duration, key string) time.Duration {
	if d <= 0 {
		return 0
	}
	f := m.factor(key)
	if m.Speed != nil {
		if s := m.Speed(); s > 0 {
			f /= s
		}
	}
	return time.Duration(math.Round(float64(d) * f))
}

// pull returns how long pulling size bytes takes.
func (m Timing) pull(size int64, key string) time.Duration {
	d := m.PullBase
	if m.PullBytesPerSec > 0 {
		d += time.Duration(float64(size) / m.PullBytesPerSec * float64(time.Second))
	}
	if m.PullBase == 0 && m.PullBytesPerSec == 0 {
		return 0
	}
	return m.Scale(d, key)
}
