package scheduler

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/engine/scheduler/framework"
)

// BenchmarkSchedulePod500Nodes is one scheduling algorithm run (snapshot
// update, filters, scores, verdicts, pick) on 500 nodes holding 10 pods each,
// without the API: the scheduler's own CPU cost per pod.
func BenchmarkSchedulePod500Nodes(b *testing.B) {
	var nodes []*v1.Node
	var pods []*v1.Pod
	for i := range 500 {
		name := fmt.Sprintf("node-%03d", i)
		nodes = append(nodes, makeNode(name, "8", "32Gi"))
		for j := range 10 {
			pods = append(pods, makePod(fmt.Sprintf("p-%d-%d", i, j), "100m", "128Mi", onNode(name)))
		}
	}
	s := newTestScheduler(b, nodes, pods)
	pod := makePod("web", "100m", "128Mi")
	b.ReportAllocs()
	for b.Loop() {
		s.cache.UpdateSnapshot(s.snapshot)
		_, st := s.schedulePod(context.Background(), framework.NewCycleState(), pod, s.snapshot.List())
		if !st.IsSuccess() {
			b.Fatal(st.Message())
		}
	}
}
