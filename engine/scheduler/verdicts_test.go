package scheduler

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

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
