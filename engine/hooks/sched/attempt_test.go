package sched

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	schedfw "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/podtrace/podtrace/stages"
)

func nodeInfo(name string) fwk.NodeInfo {
	ni := schedfw.NewNodeInfo()
	ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
	return ni
}

func TestAttemptResult(t *testing.T) {
	insufficient := func() *fwk.Status {
		return fwk.NewStatus(fwk.Unschedulable, "Insufficient cpu").WithPlugin("NodeResourcesFit")
	}
	tests := []struct {
		name      string
		record    func(a *attempt)
		chosen    string
		want      []stages.NodeVerdict
		evaluated int
		feasible  int
	}{{
		name: "scored",
		record: func(a *attempt) {
			a.filtered("b", nil)
			a.filtered("c", insufficient())
			a.filtered("a", nil)
			a.scores([]fwk.NodePluginScores{
				{Name: "b", Scores: []fwk.PluginScore{{Name: "NodeResourcesFit", Score: 80}}, TotalScore: 80},
				{Name: "a", Scores: []fwk.PluginScore{{Name: "NodeResourcesFit", Score: 90}}, TotalScore: 90},
			})
		},
		chosen: "a",
		want: []stages.NodeVerdict{
			{Node: "a", Scores: map[string]int64{"NodeResourcesFit": 90}, Total: 90},
			{Node: "b", Scores: map[string]int64{"NodeResourcesFit": 80}, Total: 80},
			{Node: "c", Plugin: "NodeResourcesFit", Reason: "Insufficient cpu"},
		},
		evaluated: 3, feasible: 2,
	}, {
		name: "one feasible node is not scored",
		record: func(a *attempt) {
			a.filtered("a", insufficient())
			a.filtered("b", nil)
		},
		chosen: "b",
		want: []stages.NodeVerdict{
			{Node: "a", Plugin: "NodeResourcesFit", Reason: "Insufficient cpu"},
			{Node: "b"},
		},
		evaluated: 2, feasible: 1,
	}, {
		name: "none fit: every node from the statuses, absent ones included",
		record: func(a *attempt) {
			a.filtered("a", insufficient()) // superseded by the statuses
			a.stop()
			a.filtered("b", nil) // a preemption dry run: not recorded
			m := schedfw.NewDefaultNodeToStatus()
			m.Set("a", insufficient())
			m.SetAbsentNodesStatus(fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node(s) didn't satisfy plugin(s) [NodeAffinity]").WithPlugin("NodeAffinity"))
			a.noFit(m, []fwk.NodeInfo{nodeInfo("b"), nodeInfo("a")})
		},
		want: []stages.NodeVerdict{
			{Node: "a", Plugin: "NodeResourcesFit", Reason: "Insufficient cpu"},
			{Node: "b", Plugin: "NodeAffinity", Reason: "node(s) didn't satisfy plugin(s) [NodeAffinity]"},
		},
		evaluated: 2,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &attempt{recording: true}
			tt.record(a)
			r, evaluated, feasible := a.result(tt.chosen)
			if r.Chosen != tt.chosen || !reflect.DeepEqual(r.Nodes, tt.want) {
				t.Errorf("result = %+v, want chosen %q and %+v", r, tt.chosen, tt.want)
			}
			if evaluated != tt.evaluated || feasible != tt.feasible {
				t.Errorf("evaluated, feasible = %d, %d; want %d, %d", evaluated, feasible, tt.evaluated, tt.feasible)
			}
		})
	}
}

func TestAttemptScoresKeepsTheBestInLargeClusters(t *testing.T) {
	var res []fwk.NodePluginScores
	for i := range maxDetailedScores + 50 {
		res = append(res, fwk.NodePluginScores{Name: fmt.Sprintf("n%03d", i), TotalScore: int64(i % 100)})
	}
	a := &attempt{recording: true}
	a.scores(res)
	// Totals 0..49 occur twice and 50..99 once: the ten best are ten nodes.
	if len(a.scored) != topScoreDetails {
		t.Fatalf("kept %d nodes, want %d", len(a.scored), topScoreDetails)
	}
	for _, v := range a.scored {
		if v.Total < 90 {
			t.Errorf("kept %s with total %d", v.Node, v.Total)
		}
	}
}

func TestEveryScheduleVariantHasARejection(t *testing.T) {
	for _, v := range stages.Variants(stages.Schedule) {
		if _, ok := rejections[v.Name]; !ok {
			t.Errorf("schedule variant %q has no upstream rejection", v.Name)
		}
	}
	if got := rejectionFor(stages.Fault{}); got != rejections["cpu"] {
		t.Errorf("default rejection = %+v, want cpu's", got)
	}
}

func TestFlakeRetry(t *testing.T) {
	for attempts, want := range map[int]time.Duration{0: time.Second, 1: time.Second, 2: 2 * time.Second, 4: 8 * time.Second, 5: 10 * time.Second, 50: 10 * time.Second} {
		if got := flakeRetry(attempts); got != want {
			t.Errorf("flakeRetry(%d) = %v, want %v", attempts, got, want)
		}
	}
}
