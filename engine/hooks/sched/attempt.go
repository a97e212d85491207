package sched

import (
	"cmp"
	"slices"
	"strings"
	"sync"

	fwk "k8s.io/kube-scheduler/framework"

	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

// Verdict limits: up to maxDetailedScores scored nodes each get their total
// and per-plugin scores; beyond that (large clusters) only the
// topScoreDetails best-scored ones (ties at the cut included, so the chosen
// node is always there) are kept, so that an attempt's result stays small.
// Rejected nodes are always all listed.
const (
	maxDetailedScores = 100
	topScoreDetails   = 10
)

// attemptKey is the CycleState key of the attempt record.
const attemptKey fwk.StateKey = PluginName + "/attempt"

// attempt records one scheduling attempt of one pod: its span, and what the
// filters and scores said of each node. Filters run on many goroutines.
type attempt struct {
	span *trace.Span

	mu sync.Mutex
	// recording is on from PreFilter until PostFilter: preemption's dry runs
	// filter nodes again, and those are not the attempt's verdicts.
	recording bool
	feasible  []string
	rejected  []stages.NodeVerdict
	scored    []stages.NodeVerdict
	// failed holds every node's verdict when none fit (from PostFilter's
	// statuses, which include the nodes PreFilter ruled out).
	failed []stages.NodeVerdict
}

// Clone returns the record itself: cloned cycle states (preemption,
// nominated pods) belong to the same attempt.
func (a *attempt) Clone() fwk.StateData { return a }

// attemptOf returns the attempt recorded in state, nil if none.
func attemptOf(state fwk.CycleState) *attempt {
	d, err := state.Read(attemptKey)
	if err != nil {
		return nil
	}
	a, _ := d.(*attempt)
	return a
}

// filtered records a node's filter verdict.
func (a *attempt) filtered(node string, st *fwk.Status) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.recording {
		return
	}
	if st.IsSuccess() {
		a.feasible = append(a.feasible, node)
		return
	}
	a.rejected = append(a.rejected, stages.NodeVerdict{Node: node, Plugin: st.Plugin(), Reason: st.Message()})
}

// scores records the score plugins' scores of the feasible nodes.
func (a *attempt) scores(res []fwk.NodePluginScores) {
	keep := len(res)
	var cut int64
	if keep > maxDetailedScores {
		totals := make([]int64, len(res))
		for i, ns := range res {
			totals[i] = ns.TotalScore
		}
		slices.SortFunc(totals, func(x, y int64) int { return cmp.Compare(y, x) })
		cut = totals[topScoreDetails-1]
	}
	var out []stages.NodeVerdict
	for _, ns := range res {
		if keep > maxDetailedScores && ns.TotalScore < cut {
			continue
		}
		v := stages.NodeVerdict{Node: ns.Name, Total: ns.TotalScore, Scores: make(map[string]int64, len(ns.Scores))}
		for _, ps := range ns.Scores {
			v.Scores[ps.Name] = ps.Score
		}
		out = append(out, v)
	}
	a.mu.Lock()
	a.scored = out
	a.mu.Unlock()
}

// stop ends recording, before PostFilter.
func (a *attempt) stop() {
	a.mu.Lock()
	a.recording = false
	a.mu.Unlock()
}

// noFit records every node's verdict from the statuses of a failed attempt.
func (a *attempt) noFit(statuses fwk.NodeToStatusReader, nodes []fwk.NodeInfo) {
	out := make([]stages.NodeVerdict, 0, len(nodes))
	for _, ni := range nodes {
		name := ni.Node().Name
		st := statuses.Get(name)
		v := stages.NodeVerdict{Node: name}
		if st != nil && !st.IsSuccess() {
			v.Plugin, v.Reason = st.Plugin(), st.Message()
		}
		out = append(out, v)
	}
	a.mu.Lock()
	a.failed = out
	a.mu.Unlock()
}

// result returns the attempt's verdicts, sorted by node, with chosen the
// node picked ("" when none fit), and how many nodes were evaluated and found
// feasible.
func (a *attempt) result(chosen string) (r *stages.SchedulingResult, evaluated, feasible int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r = &stages.SchedulingResult{Chosen: chosen}
	switch {
	case a.failed != nil:
		r.Nodes = append(r.Nodes, a.failed...)
		evaluated = len(a.failed)
	default:
		r.Nodes = append(r.Nodes, a.rejected...)
		if a.scored != nil {
			r.Nodes = append(r.Nodes, a.scored...)
		} else {
			// One feasible node is not scored; several unscored ones
			// means scoring failed or did not run.
			for _, n := range a.feasible {
				r.Nodes = append(r.Nodes, stages.NodeVerdict{Node: n})
			}
		}
		evaluated, feasible = len(a.rejected)+len(a.feasible), len(a.feasible)
	}
	slices.SortFunc(r.Nodes, func(x, y stages.NodeVerdict) int { return strings.Compare(x.Node, y.Node) })
	return r, evaluated, feasible
}
