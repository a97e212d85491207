package scenario

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/client-go/kubernetes"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/trace"
)

// Symptoms watches for what a scenario's story says the broken cluster
// shows (its expectations): the stage events from the moment it starts,
// the Events, and every Waiting state the goal's pods pass through. Start
// it before Prepare, so that nothing the break causes is missed.
type Symptoms struct {
	s     *Scenario
	c     kubernetes.Interface
	rec   *trace.Recording
	waits *waitings
	stop  context.CancelFunc
	seen  []string // per expectation, what matched it ("" while unseen)
}

// WatchSymptoms starts watching e for s's expectations; Stop ends it.
func WatchSymptoms(ctx context.Context, e *engine.Engine, s *Scenario) (*Symptoms, error) {
	ctx, cancel := context.WithCancel(ctx)
	rec := e.Hub.Record()
	waits, err := watchWaitings(ctx, e.AdminClient(), s.Goal.Namespace)
	if err != nil {
		rec.Stop()
		cancel()
		return nil, err
	}
	return &Symptoms{s: s, c: e.AdminClient(), rec: rec, waits: waits, stop: cancel, seen: make([]string, len(s.Expect))}, nil
}

// Stop ends the watch and lets go of the stage events it recorded.
func (w *Symptoms) Stop() {
	w.stop()
	w.rec.Stop()
}

// Look looks again for every expectation not yet seen; newly calls back
// for each one it finds. It returns how many are still unseen.
func (w *Symptoms) Look(ctx context.Context, newly func(x Expectation, what string)) (unseen int) {
	for i, x := range w.s.Expect {
		if w.seen[i] != "" {
			continue
		}
		if w.seen[i] = observe(ctx, w.c, w.rec, w.waits, x); w.seen[i] == "" {
			unseen++
		} else if newly != nil {
			newly(x, w.seen[i])
		}
	}
	return unseen
}

// Seen returns, per expectation, what matched it ("" while unseen).
func (w *Symptoms) Seen() []string { return append([]string(nil), w.seen...) }

// Unseen describes the expectations not seen yet, "; " between them.
func (w *Symptoms) Unseen() string {
	var out []string
	for i, x := range w.s.Expect {
		if w.seen[i] == "" {
			out = append(out, x.String())
		}
	}
	return strings.Join(out, "; ")
}

// LastProblem describes the latest failed or retrying stage event seen
// since the watch started ("" when there was none).
func (w *Symptoms) LastProblem() string { return lastProblem(w.rec.Events()) }

// String says how many of the symptoms have shown.
func (w *Symptoms) String() string {
	n := 0
	for _, s := range w.seen {
		if s != "" {
			n++
		}
	}
	return fmt.Sprintf("%d of %d symptoms seen", n, len(w.seen))
}
