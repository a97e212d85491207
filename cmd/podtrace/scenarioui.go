package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/scenario"
	"github.com/podtrace/podtrace/source/live"
	"github.com/podtrace/podtrace/tui"
)

// scenarioUI opens the UI at once on the scenario's story, with the
// cluster's start-up progress under it; behind it the cluster starts, is
// broken as the story says, and the goal is watched (a goal met opens the
// banner). q says it is stopping the cluster and stops it; the goal met, or
// the hints, are printed once the UI has closed.
func scenarioUI(ctx context.Context, cf *clusterFlags, s *scenario.Scenario, theme string) error {
	uiCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	p := &scenarioPlay{s: s, started: time.Now()}
	src := live.New(uiCtx)
	lsrc := &scenarioSource{Source: src, play: p}
	var cleanup func()
	done := make(chan struct{})
	go func() {
		defer close(done)
		var err error
		if cleanup, err = p.run(uiCtx, cf, src); err != nil && !errors.Is(err, context.Canceled) {
			p.fail(err)
			src.SetFailed()
			cancel()
		}
	}()
	uiErr := tui.Run(uiCtx, lsrc, tui.Options{Theme: theme, NoColor: os.Getenv("NO_COLOR") != ""})
	cancel()
	fmt.Fprintln(terminal, "stopping the cluster…")
	<-done
	if cleanup != nil {
		if e := src.Engine(); e != nil {
			releaseHolds(e)
		}
		cleanup()
	}
	return p.report(uiErr)
}

// releaseHolds lets every request a scenario's fault or a breakpoint
// holds go on (delays ended, faults removed, held pods continued, the
// gates resumed), so that stopping the cluster does not wait for them.
func releaseHolds(e *engine.Engine) {
	t := e.Tracer
	t.Faults.SkipDelays()
	for _, f := range t.Faults.List() {
		t.Faults.Remove(f.ID)
	}
	t.Breaks.ContinueAll()
	t.Resume()
}

// scenarioPlay is one run of a scenario in the UI: where it stands, for
// the story box and the goal banner.
type scenarioPlay struct {
	s       *scenario.Scenario
	started time.Time

	mu       sync.Mutex
	progress string // "" while the cluster starts
	solved   string // how the goal holds, once it does
	err      error  // why the cluster could not start or break
}

// run starts the cluster, attaches src, breaks the cluster and watches the
// goal until ctx ends. The cleanup it returns stops the cluster (nil when
// it did not start).
func (p *scenarioPlay) run(ctx context.Context, cf *clusterFlags, src *live.Source) (func(), error) {
	e, cleanup, err := cf.startNodes(ctx, p.s.Nodes) // the scenario brings its nodes
	if err != nil {
		return nil, err
	}
	manifest, err := writeManifest(e, p.s)
	if err != nil {
		return cleanup, err
	}
	if err := src.Attach(e); err != nil {
		return cleanup, err
	}
	p.set("The cluster is up; breaking it as the story says…")
	symptoms, err := scenario.WatchSymptoms(ctx, e, p.s)
	if err != nil {
		return cleanup, err
	}
	if err := p.s.Prepare(ctx, e); err != nil {
		symptoms.Stop()
		return cleanup, err
	}
	go p.watchSymptoms(ctx, symptoms, fmt.Sprintf("The manifest applied is %s: edit it and apply it again "+
		"(a, then \"manifest file…\"). kubectl works too: export KUBECONFIG=%s", manifest, e.Kubeconfig))
	return cleanup, waitGoal(ctx, e, p.s, time.Second, func(detail string) {
		p.mu.Lock()
		p.solved = detail
		p.mu.Unlock()
		announceGoal(ctx, e, p.s, detail)
	})
}

// symptomsPatience is how long the story box waits for the symptoms the
// story describes before it names those that have not shown.
const symptomsPatience = time.Minute

// watchSymptoms says, until every symptom the story describes has shown,
// how many have; then that the cluster is broken as the story says, and
// how to work on it (then).
func (p *scenarioPlay) watchSymptoms(ctx context.Context, symptoms *scenario.Symptoms, then string) {
	defer symptoms.Stop()
	since := time.Now()
	for symptoms.Look(ctx, nil) > 0 {
		every := 250 * time.Millisecond
		if time.Since(since) < symptomsPatience {
			p.set(fmt.Sprintf("Breaking the cluster as the story says… %s. %s", symptoms, then))
		} else {
			p.set(fmt.Sprintf("The cluster is not yet broken as the story says: not seen in %s: %s. %s",
				symptomsPatience, symptoms.Unseen(), then))
			every = 2 * time.Second // each look may list the cluster's Events
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
	p.set("The cluster is broken as the story says. " + then)
}

func (p *scenarioPlay) set(progress string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.progress = progress
}

func (p *scenarioPlay) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.err = err
}

// lesson is the scenario as the UI shows it now.
func (p *scenarioPlay) lesson() *tui.Lesson {
	p.mu.Lock()
	defer p.mu.Unlock()
	progress := p.progress
	if progress == "" {
		nodes := fmt.Sprintf("%d nodes", len(p.s.Nodes))
		if len(p.s.Nodes) == 1 {
			nodes = "1 node"
		}
		progress = fmt.Sprintf("Starting the cluster (etcd, the control plane, %s)… %ds", nodes, int(time.Since(p.started).Seconds()))
	}
	return &tui.Lesson{Title: p.s.Title, Story: p.s.Story, Goal: p.s.Goal.Description, Hints: p.s.Hints,
		Explanation: p.s.Explanation, Progress: progress}
}

// report prints, once the UI has closed, the goal met and the explanation,
// or the hints; it returns the error that ended the run, if any.
func (p *scenarioPlay) report(uiErr error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return p.err
	}
	if p.solved != "" {
		fmt.Fprintf(terminal, "Goal met: %s\n\n%s\n", p.solved, p.s.Explanation)
	} else {
		fmt.Fprintf(terminal, "Goal not met yet (%s). Hints:\n", p.s.Goal.Description)
		for i, h := range p.s.Hints {
			fmt.Fprintf(terminal, "  %d. %s\n", i+1, h)
		}
	}
	return uiErr
}

// scenarioSource is the embedded cluster with the scenario's story, hints
// and goal for the UI (S, H, and the banner once the goal is met).
type scenarioSource struct {
	*live.Source
	play *scenarioPlay
}

// Lesson returns the scenario as the UI shows it.
func (s *scenarioSource) Lesson() *tui.Lesson { return s.play.lesson() }

// GoalMet says how the goal holds, "" while it does not.
func (s *scenarioSource) GoalMet() string {
	s.play.mu.Lock()
	defer s.play.mu.Unlock()
	return s.play.solved
}
