package scheduler

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/podtrace/podtrace/engine/scheduler/framework"
)

// newTestScheduler returns a scheduler (not started) whose cache holds nodes and assigned pods.
func newTestScheduler(t testing.TB, nodes []*v1.Node, pods []*v1.Pod) *Scheduler {
	t.Helper()
	s, err := New(Config{Client: fake.NewClientset(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		s.cache.AddNode(n)
	}
	for _, p := range pods {
		s.cache.AddPod(p)
	}
	s.cache.UpdateSnapshot(s.snapshot)
	return s
}

// TestFailedSchedulingMessages checks the FitError message, word for word,
// against what kube-scheduler 1.36.3 prints for the same 3-node cluster
// (FitError.Error, DefaultPreemption.PostFilter and the filter plugins' reasons).
func TestFailedSchedulingMessages(t *testing.T) {
	three := func(opts ...func(*v1.Node)) []*v1.Node {
		return []*v1.Node{makeNode("node-1", "2", "4Gi", opts...), makeNode("node-2", "2", "4Gi", opts...), makeNode("node-3", "2", "4Gi", opts...)}
	}
	tests := []struct {
		name  string
		nodes []*v1.Node
		pods  []*v1.Pod
		pod   *v1.Pod
		want  string
	}{
		{
			name:  "pod larger than every node",
			nodes: three(),
			pod:   makePod("big", "8", "1Gi"),
			want:  "0/3 nodes are available: 3 Insufficient cpu. no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
		},
		{
			name:  "pod larger than every node in cpu and memory",
			nodes: three(),
			pod:   makePod("big", "8", "64Gi"),
			want:  "0/3 nodes are available: 3 Insufficient cpu, 3 Insufficient memory. no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
		},
		{
			name:  "untolerated taint",
			nodes: three(withTaint("dedicated", "gpu", v1.TaintEffectNoSchedule)),
			pod:   makePod("web", "100m", "64Mi"),
			want:  "0/3 nodes are available: 3 node(s) had untolerated taint(s). no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
		},
		{
			name:  "nodeSelector matching nothing",
			nodes: three(),
			pod:   makePod("web", "100m", "64Mi", withNodeSelector("disktype", "ssd")),
			want:  "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
		},
		{
			name:  "nodes full, no lower-priority pods to evict",
			nodes: three(),
			pods: []*v1.Pod{makePod("a", "1500m", "", onNode("node-1")), makePod("b", "1500m", "", onNode("node-2")),
				makePod("c", "1500m", "", onNode("node-3"))},
			pod:  makePod("web", "1", ""),
			want: "0/3 nodes are available: 3 Insufficient cpu. no new claims to deallocate, preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.",
		},
		{
			name: "mixed: one full node, two tainted",
			nodes: []*v1.Node{makeNode("node-1", "2", "4Gi"),
				makeNode("node-2", "2", "4Gi", withTaint("dedicated", "gpu", v1.TaintEffectNoSchedule)),
				makeNode("node-3", "2", "4Gi", withTaint("dedicated", "gpu", v1.TaintEffectNoExecute))},
			pods: []*v1.Pod{makePod("a", "1500m", "", onNode("node-1"))},
			pod:  makePod("web", "1", ""),
			want: "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint(s). no new claims to deallocate, preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling.",
		},
		{
			name:  "preemptionPolicy Never",
			nodes: three(),
			pods: []*v1.Pod{makePod("a", "1500m", "", onNode("node-1")), makePod("b", "1500m", "", onNode("node-2")),
				makePod("c", "1500m", "", onNode("node-3"))},
			pod:  makePod("web", "1", "", neverPreempt),
			want: "0/3 nodes are available: 3 Insufficient cpu. no new claims to deallocate, preemption: not eligible due to preemptionPolicy=Never.",
		},
		{
			name:  "cordoned nodes",
			nodes: three(cordoned),
			pod:   makePod("web", "100m", ""),
			want:  "0/3 nodes are available: 3 node(s) were unschedulable. no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
		},
		{
			name:  "host port taken",
			nodes: three(),
			pods: []*v1.Pod{makePod("a", "", "", onNode("node-1"), withHostPort(80)), makePod("b", "", "", onNode("node-2"), withHostPort(80)),
				makePod("c", "", "", onNode("node-3"), withHostPort(80))},
			pod:  makePod("web", "", "", withHostPort(80)),
			want: "0/3 nodes are available: 3 node(s) didn't have free ports for the requested pod ports. no new claims to deallocate, preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.",
		},
		{
			name:  "evicting lower-priority pods would not be enough",
			nodes: three(),
			pods: []*v1.Pod{makePod("a", "1", "", onNode("node-1"), withPriority(10)), makePod("low", "500m", "", onNode("node-1")),
				makePod("b", "1500m", "", onNode("node-2"), withPriority(10)), makePod("c", "1500m", "", onNode("node-3"), withPriority(10))},
			pod:  makePod("web", "1500m", "", withPriority(5)),
			want: "0/3 nodes are available: 3 Insufficient cpu. no new claims to deallocate, preemption: 0/3 nodes are available: 1 Insufficient cpu, 2 No preemption victims found for incoming pod.",
		},
		{
			name:  "DaemonSet-style node name affinity, node full",
			nodes: three(),
			pods:  []*v1.Pod{makePod("a", "1500m", "", onNode("node-2"))},
			pod:   makePod("ds", "1", "", withNodeNameAffinity("node-2")),
			want:  "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't satisfy plugin(s) [NodeAffinity]. no new claims to deallocate, preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling.",
		},
		{
			name:  "node name affinity to a missing node",
			nodes: three(),
			pod:   makePod("ds", "1", "", withNodeNameAffinity("node-9")),
			want:  "0/3 nodes are available: 3 node(s) didn't satisfy plugin(s) [NodeAffinity]. no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
		},
		{
			name:  "no nodes",
			nodes: nil,
			pod:   makePod("web", "", ""),
			want:  "no nodes available to schedule pods",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestScheduler(t, tt.nodes, tt.pods)
			res, st := s.schedulePod(context.Background(), framework.NewCycleState(), tt.pod, s.snapshot.List())
			if st.IsSuccess() {
				t.Fatalf("scheduled on %q, want failure", res.host)
			}
			if !st.IsRejected() {
				t.Fatalf("status code %v, want a rejection", st.Code())
			}
			if got := st.Message(); got != tt.want {
				t.Errorf("message\n got: %s\nwant: %s", got, tt.want)
			}
		})
	}
}

func TestPreemptionFindsVictims(t *testing.T) {
	nodes := []*v1.Node{makeNode("node-1", "2", "4Gi"), makeNode("node-2", "2", "4Gi")}
	pods := []*v1.Pod{makePod("low", "1500m", "", onNode("node-1"), withPriority(1)), makePod("high", "1500m", "", onNode("node-2"), withPriority(100))}
	s := newTestScheduler(t, nodes, pods)
	res, st := s.schedulePod(context.Background(), framework.NewCycleState(), makePod("web", "1", "", withPriority(50)), s.snapshot.List())
	// Upstream: PostFilter succeeds, so no preemption sentence; the pod is nominated.
	if want := "0/2 nodes are available: 2 Insufficient cpu."; st.Message() != want {
		t.Errorf("message %q, want %q", st.Message(), want)
	}
	if res.preemption == nil || res.preemption.Node != "node-1" || len(res.preemption.Victims) != 1 || res.preemption.Victims[0].Name != "low" {
		t.Fatalf("preemption = %+v, want node-1 with victim low", res.preemption)
	}
}

func TestVerdictsNamePluginAndReason(t *testing.T) {
	nodes := []*v1.Node{makeNode("node-1", "2", "4Gi"), makeNode("node-2", "2", "4Gi", withTaint("k", "v", v1.TaintEffectNoSchedule)),
		makeNode("node-3", "2", "4Gi", withLabel("disktype", "ssd"))}
	s := newTestScheduler(t, nodes, nil)
	res, st := s.schedulePod(context.Background(), framework.NewCycleState(), makePod("web", "100m", "", withNodeSelector("disktype", "ssd")), s.snapshot.List())
	if !st.IsSuccess() || res.host != "node-3" {
		t.Fatalf("host %q status %v, want node-3", res.host, st.Message())
	}
	v := res.verdicts
	if v.Chosen != "node-3" || len(v.Nodes) != 3 {
		t.Fatalf("verdicts %+v", v)
	}
	want := map[string][2]string{
		"node-1": {"NodeAffinity", "node(s) didn't match Pod's node affinity/selector"},
		"node-2": {"TaintToleration", "node(s) had untolerated taint(s)"},
		"node-3": {"", ""},
	}
	for _, nv := range v.Nodes {
		if w := want[nv.Node]; nv.Plugin != w[0] || nv.Reason != w[1] {
			t.Errorf("%s: plugin %q reason %q, want %q %q", nv.Node, nv.Plugin, nv.Reason, w[0], w[1])
		}
	}
}

func TestNodeNameAffinityPicksThatNode(t *testing.T) {
	nodes := []*v1.Node{makeNode("node-1", "2", "4Gi"), makeNode("node-2", "2", "4Gi"), makeNode("node-3", "2", "4Gi")}
	s := newTestScheduler(t, nodes, nil)
	res, st := s.schedulePod(context.Background(), framework.NewCycleState(), makePod("ds", "100m", "", withNodeNameAffinity("node-3")), s.snapshot.List())
	if !st.IsSuccess() || res.host != "node-3" {
		t.Fatalf("host %q (%s), want node-3", res.host, st.Message())
	}
	if len(res.verdicts.Nodes) != 3 || res.verdicts.Nodes[0].Reason != "node(s) didn't satisfy plugin(s) [NodeAffinity]" || res.verdicts.Nodes[0].Plugin != "NodeAffinity" {
		t.Errorf("verdicts %+v", res.verdicts.Nodes)
	}
}

func TestScoresSpreadAndWeights(t *testing.T) {
	nodes := []*v1.Node{makeNode("node-1", "4", "8Gi"), makeNode("node-2", "4", "8Gi"), makeNode("node-3", "4", "8Gi")}
	pods := []*v1.Pod{makePod("a", "2", "4Gi", onNode("node-1")), makePod("b", "1", "2Gi", onNode("node-2"))}
	s := newTestScheduler(t, nodes, pods)
	res, st := s.schedulePod(context.Background(), framework.NewCycleState(), makePod("web", "1", "2Gi"), s.snapshot.List())
	if !st.IsSuccess() {
		t.Fatal(st.Message())
	}
	if res.host != "node-3" {
		t.Errorf("picked %s, want the emptiest node-3", res.host)
	}
	for _, nv := range res.verdicts.Nodes {
		var sum int64
		for _, sc := range nv.Scores {
			if sc < 0 || sc > 100*3 {
				t.Errorf("%s: score %d out of range", nv.Node, sc)
			}
			sum += sc
		}
		if sum != nv.Total {
			t.Errorf("%s: total %d != sum of scores %d", nv.Node, nv.Total, sum)
		}
		if nv.Node == "node-3" && nv.Scores["NodeResourcesFit"] != 75 {
			// (4000-1000)/4000 and (8Gi-2Gi)/8Gi both give 75.
			t.Errorf("node-3 LeastAllocated = %d, want 75", nv.Scores["NodeResourcesFit"])
		}
	}
}
