package waittest

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB whose Fatalf records the message and ends the
// goroutine, as testing's does.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls Eventually with a recorder in a goroutine of its own, as Goexit
// needs, and returns its failure message ("" when it passed).
func run(timeout time.Duration, cond func() (bool, string)) string {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		EventuallyEvery(r, "the pod to start", time.Millisecond, timeout, cond)
	}()
	<-done
	return r.failed
}

func TestEventually(t *testing.T) {
	for _, tc := range []struct {
		name    string
		trueAt  int // the call at which cond first holds; 0: never
		state   string
		want    []string // parts of the failure; none: passes
		atLeast int      // calls cond must have had
	}{
		{name: "holds at once", trueAt: 1, atLeast: 1},
		{name: "holds on the fifth poll", trueAt: 5, atLeast: 5},
		{name: "never holds", state: "phase Pending", atLeast: 2,
			want: []string{"timed out after 50ms waiting for the pod to start", "last seen:\nphase Pending"}},
		{name: "never holds, nothing to say", atLeast: 2,
			want: []string{"timed out after 50ms waiting for the pod to start"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			failed := run(50*time.Millisecond, func() (bool, string) {
				calls++
				return tc.trueAt > 0 && calls >= tc.trueAt, tc.state
			})
			if len(tc.want) == 0 && failed != "" {
				t.Fatalf("failed: %s", failed)
			}
			for _, w := range tc.want {
				if !strings.Contains(failed, w) {
					t.Errorf("failure %q lacks %q", failed, w)
				}
			}
			if len(tc.want) > 0 && tc.state == "" && strings.Contains(failed, "last seen") {
				t.Errorf("failure %q shows an empty last state", failed)
			}
			if calls < tc.atLeast {
				t.Errorf("cond called %d times, want at least %d", calls, tc.atLeast)
			}
		})
	}
}
