package model

import (
	"testing"
	"time"
)

func TestLatencyDeterministic(t *testing.T) {
	a := Timing{Latency: DefaultLatency, Seed: 42}
	b := Timing{Latency: DefaultLatency, Seed: 42}
	c := Timing{Latency: DefaultLatency, Seed: 43}
	for _, key := range []string{"sandbox/default/web-1/0", "create/default/web-1/app/0", "start/x"} {
		if a.Scale(time.Second, key) != b.Scale(time.Second, key) {
			t.Fatalf("same seed, different duration for %s", key)
		}
	}
	if a.Scale(time.Second, "k") == c.Scale(time.Second, "k") {
		t.Fatal("different seeds gave the same duration")
	}
	d := a.Scale(400*time.Millisecond, "sandbox/x")
	if d < 360*time.Millisecond || d > 440*time.Millisecond {
		t.Fatalf("sandbox latency %v outside ±10%%", d)
	}
	z := Timing{}
	if z.pull(72_955_450, "p") != 0 || z.Scale(z.Sandbox, "s") != 0 {
		t.Fatal("zero latency is not zero")
	}
	// nginx at 25 MB/s after 0.3 s: about 3.2 s.
	if p := a.pull(72_955_450, "pull/nginx"); p < 2800*time.Millisecond || p > 3600*time.Millisecond {
		t.Fatalf("nginx pull %v", p)
	}
}

// TestLatencySpeed changes the speed between two waits: each takes the
// speed of the moment, as the + and - keys change it while pods start.
func TestLatencySpeed(t *testing.T) {
	speed := 4.0
	lat := DefaultLatency
	lat.Jitter = 0
	m := Timing{Latency: lat, Speed: func() float64 { return speed }}
	if d := m.Scale(time.Second, "k"); d != 250*time.Millisecond {
		t.Fatalf("at speed 4: %v, want 250ms", d)
	}
	speed = 0.5
	if d := m.Scale(time.Second, "k"); d != 2*time.Second {
		t.Fatalf("at speed 0.5: %v, want 2s", d)
	}
	// nginx at 25 MB/s after 0.3 s (about 3.2 s) is twice as long at half speed.
	if p := m.pull(72_955_450, "pull/nginx"); p < 5600*time.Millisecond || p > 7200*time.Millisecond {
		t.Fatalf("nginx pull at speed 0.5: %v", p)
	}
}
