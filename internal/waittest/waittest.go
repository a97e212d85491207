// Package waittest waits in tests for something to become true: one poll on
// wait.PollUntilContextTimeout that fails the test with what it waited for
// and the last state it saw, instead of a hand-written deadline loop in each
// package. It imports nothing of the project, so every package's tests
// (engine, tui, source, cmd, e2e) may use it.
package waittest

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Interval is how often Eventually asks its condition.
const Interval = 100 * time.Millisecond

// Eventually polls cond every Interval, the first time at once, until it
// reports done; once timeout has passed it fails t with what it was waiting
// for and the state cond last described.
func Eventually(t testing.TB, what string, timeout time.Duration, cond func() (done bool, state string)) {
	t.Helper()
	EventuallyEvery(t, what, Interval, timeout, cond)
}

// EventuallyEvery is Eventually asking cond every interval: shorter where a
// unit test waits for a goroutine, longer where asking is costly.
func EventuallyEvery(t testing.TB, what string, interval, timeout time.Duration, cond func() (done bool, state string)) {
	t.Helper()
	var state string
	err := wait.PollUntilContextTimeout(context.Background(), interval, timeout, true, func(context.Context) (bool, error) {
		var done bool
		done, state = cond()
		return done, nil
	})
	if err == nil {
		return
	}
	if state == "" {
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
	t.Fatalf("timed out after %v waiting for %s; last seen:\n%s", timeout, what, state)
}
