package cri

import (
	"fmt"
	"math"
)

// Speed limits of a simulated runtime (Config.Speed, see ValidateSpeed).
const (
	// MinSpeed is the slowest speed: every latency 1,024 times longer.
	MinSpeed = 1.0 / 1024
	// MaxSpeed is the fastest: about a million times shorter, near zero.
	MaxSpeed = 1 << 20
)

// ValidateSpeed reports whether f can divide a simulated runtime's
// latencies: a finite number within [MinSpeed, MaxSpeed].
func ValidateSpeed(f float64) error {
	if math.IsNaN(f) || f < MinSpeed || f > MaxSpeed {
		return fmt.Errorf("speed %v out of range [%v, %v]", f, MinSpeed, float64(MaxSpeed))
	}
	return nil
}
