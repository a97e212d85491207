package scheduler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/engine/scheduler/framework"
	"github.com/podtrace/podtrace/stages"
)

// TestTenthBestTotal checks the selection against sorting, with repeated
// totals as scores produce them.
func TestTenthBestTotal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		n := topScoreDetails + 1 + r.IntN(300)
		scores := make([]framework.NodePluginScores, n)
		totals := make([]int64, n)
		spread := 1 + r.Int64N(400)
		for i := range scores {
			scores[i].TotalScore = r.Int64N(spread)
			totals[i] = scores[i].TotalScore
		}
		slices.Sort(totals)
		if got, want := tenthBestTotal(scores), totals[n-topScoreDetails]; got != want {
			t.Fatalf("%d scores over [0,%d): got %d, want %d", n, spread, got, want)
		}
	}
}

// TestAddScoreVerdictsLimits checks which feasible nodes keep their
// per-plugin scores on a large cluster: those above the tenth best total,
// and the chosen node.
func TestAddScoreVerdictsLimits(t *testing.T) {
	name := func(i int) string { return fmt.Sprintf("node-%03d", i) }
	var scores []framework.NodePluginScores
	for i := range maxDetailedScores + 20 {
		total := int64(i % 50) // 0..19 three times, 20..49 twice
		scores = append(scores, framework.NodePluginScores{Name: name(i), TotalScore: total,
			Scores: []framework.PluginScore{{Name: "P", Score: total}}})
	}
	var r stages.SchedulingResult
	addScoreVerdicts(&r, scores, name(0))
	// Best totals: 49, 49, 48, 48, 47, 47, 46, 46, 45, 45: the tenth is 45.
	// Kept: the eight nodes above it and the chosen node (total 0).
	if len(r.Nodes) != 9 {
		t.Fatalf("kept %d verdicts, want 9: %+v", len(r.Nodes), r.Nodes)
	}
	for _, v := range r.Nodes {
		if v.Node != name(0) && v.Total <= 45 {
			t.Errorf("kept %s with total %d", v.Node, v.Total)
		}
		if v.Scores["P"] != v.Total {
			t.Errorf("%s: scores %v, total %d", v.Node, v.Scores, v.Total)
		}
	}
}

// TestNextStartNodeIndex checks upstream's rotation: each cycle starts where
// the previous one stopped, moving on by the nodes processed modulo all the
// nodes, also when a PreFilter plugin restricted the nodes filtered.
func TestNextStartNodeIndex(t *testing.T) {
	var nodes []*v1.Node
	for i := range 250 { // 250 nodes: 48% is 120 nodes to find
		nodes = append(nodes, makeNode(fmt.Sprintf("node-%03d", i), "8", "32Gi"))
	}
	s := newTestScheduler(t, nodes, nil)
	for i := range 4 {
		if _, st := s.schedulePod(context.Background(), framework.NewCycleState(), makePod("p", "100m", "128Mi"), s.snapshot.List()); !st.IsSuccess() {
			t.Fatal(st.Message())
		}
		if want := (i + 1) * 120 % 250; s.nextStartNodeIndex != want {
			t.Fatalf("cycle %d: next start %d, want %d", i, s.nextStartNodeIndex, want)
		}
	}
	// Pinned to two nodes: both are processed, the start moves on by two
	// modulo all 250 nodes.
	s.nextStartNodeIndex = 100
	pinned := makePod("pinned", "100m", "128Mi", withNodeNameAffinity("node-001"))
	pinned.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values = []string{"node-001", "node-002"}
	if _, st := s.schedulePod(context.Background(), framework.NewCycleState(), pinned, s.snapshot.List()); !st.IsSuccess() {
		t.Fatal(st.Message())
	}
	if s.nextStartNodeIndex != 102 {
		t.Fatalf("pinned: next start %d, want 102", s.nextStartNodeIndex)
	}
}
