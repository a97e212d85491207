package scenario

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

// CheckOptions tune Check.
type CheckOptions struct {
	// Timeout bounds each phase (broken, then fixed) in real time; 2 minutes when zero.
	Timeout time.Duration
	// Log receives one line per step; nil discards them.
	Log io.Writer
}

// Report says what Check saw.
type Report struct {
	// Seen holds, per expectation, the matching stage event, Event or status.
	Seen []string
	// Broken is where the goal stood once every expectation was seen.
	Broken string
	// Fixed is where the goal stood after the fix.
	Fixed string
}

// String renders the expectation as it reads in the file.
func (x Expectation) String() string {
	var s string
	switch {
	case x.Stage != "":
		s = "stage " + string(x.Stage)
		if x.Status != "" {
			s += " " + string(x.Status)
		}
		if x.Reason != "" {
			s += " " + x.Reason
		}
		if x.MinDuration > 0 {
			s += " lasting at least " + x.MinDuration.String()
		}
	case x.Event != "":
		s = "event " + x.Event
	default:
		s = "container waiting " + x.Waiting
	}
	if x.Message != "" {
		s += fmt.Sprintf(" %q", x.Message)
	}
	return s
}

// Check runs the scenario headless on e (started with the scenario's Nodes)
// and verifies that it behaves as documented: every expectation shows up
// and the goal does not hold; then the documented fix makes the goal hold.
// It runs on real time, as the components do: a delay fault is waited out.
func Check(ctx context.Context, e *engine.Engine, s *Scenario, opts CheckOptions) (*Report, error) {
	if opts.Timeout == 0 {
		opts.Timeout = 2 * time.Minute
	}
	logf := func(format string, args ...any) {
		if opts.Log != nil {
			fmt.Fprintf(opts.Log, format+"\n", args...)
		}
	}
	c := e.AdminClient()
	if err := waitNodes(ctx, e, opts.Timeout); err != nil {
		return nil, err
	}
	symptoms, err := WatchSymptoms(ctx, e, s)
	if err != nil {
		return nil, err
	}
	defer symptoms.Stop()
	if err := s.Prepare(ctx, e); err != nil {
		return nil, err
	}
	logf("%s: cluster broken as described; waiting for %d expectations", s.Name, len(s.Expect))
	rep := &Report{}
	deadline := time.Now().Add(opts.Timeout)
	for symptoms.Look(ctx, func(x Expectation, what string) { logf("%s: seen %s: %s", s.Name, x, what) }) > 0 {
		if time.Now().After(deadline) {
			rep.Seen = symptoms.Seen()
			return rep, fmt.Errorf("scenario %s: not seen within %s: %s", s.Name, opts.Timeout, symptoms.Unseen())
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return rep, err
		}
	}
	rep.Seen = symptoms.Seen()
	met, detail, err := s.Goal.Check(ctx, c)
	if err != nil {
		return rep, err
	}
	rep.Broken = detail
	if met {
		return rep, fmt.Errorf("scenario %s: the goal (%s) holds before the fix: %s", s.Name, s.Goal.Description, detail)
	}
	logf("%s: goal not met while broken: %s", s.Name, detail)
	if err := s.ApplyFix(ctx, e); err != nil {
		return rep, err
	}
	logf("%s: fix applied: %s", s.Name, s.Fix.Description)
	deadline = time.Now().Add(opts.Timeout)
	for {
		met, detail, err = s.Goal.Check(ctx, c)
		if err == nil && met {
			rep.Fixed = detail
			logf("%s: goal met: %s", s.Name, detail)
			return rep, nil
		}
		if time.Now().After(deadline) {
			return rep, fmt.Errorf("scenario %s: the fix did not reach the goal (%s) within %s: %s%s", s.Name, s.Goal.Description, opts.Timeout, detail,
				symptoms.LastProblem())
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return rep, err
		}
	}
}

// lastProblem describes the latest failed or retrying stage event.
func lastProblem(evs []stages.Event) string {
	for i := len(evs) - 1; i >= 0; i-- {
		if ev := evs[i]; ev.Status == stages.Failed || ev.Status == stages.Retrying {
			return fmt.Sprintf("; last problem: %s %s %s %s: %s", ev.Kind, ev.Key(), ev.Stage, ev.Reason, ev.Message)
		}
	}
	return ""
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// observe returns a description of what matches x, or "".
// Waiting states come from waits, which saw every status the pods had.
func observe(ctx context.Context, c kubernetes.Interface, rec *trace.Recording, waits *waitings, x Expectation) string {
	switch {
	case x.Stage != "":
		for _, ev := range rec.Events() {
			if ev.Stage != x.Stage || (x.Status != "" && ev.Status != x.Status) || (x.Reason != "" && ev.Reason != x.Reason) ||
				!strings.Contains(ev.Message, x.Message) {
				continue
			}
			if x.MinDuration > 0 && (!ev.Status.Terminal() || ev.DurationMs < float64(x.MinDuration.Milliseconds())) {
				continue
			}
			return fmt.Sprintf("%s %s %s %s %s (%.0fms)", ev.Kind, ev.Key(), ev.Status, ev.Reason, ev.Message, ev.DurationMs)
		}
	case x.Event != "":
		list, err := c.CoreV1().Events("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return ""
		}
		for _, ev := range list.Items {
			if ev.Reason == x.Event && strings.Contains(ev.Message, x.Message) {
				return fmt.Sprintf("%s %s/%s: %s %s", ev.Type, strings.ToLower(ev.InvolvedObject.Kind), ev.InvolvedObject.Name, ev.Reason, ev.Message)
			}
		}
	default:
		return waits.find(x.Waiting, x.Message)
	}
	return ""
}

// waitNodes waits up to timeout until every node is Ready and schedulable.
func waitNodes(ctx context.Context, e *engine.Engine, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return e.WaitNodesReady(ctx)
}
