package tainttoleration

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/engine/scheduler/framework"
)

func TestFilter(t *testing.T) {
	gpu := v1.Taint{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}
	tests := []struct {
		name        string
		taints      []v1.Taint
		tolerations []v1.Toleration
		want        string
	}{
		{"no taints", nil, nil, ""},
		{"untolerated NoSchedule", []v1.Taint{gpu}, nil, ErrReasonUntolerated},
		{"untolerated NoExecute", []v1.Taint{{Key: "k", Effect: v1.TaintEffectNoExecute}}, nil, ErrReasonUntolerated},
		{"PreferNoSchedule does not filter", []v1.Taint{{Key: "k", Effect: v1.TaintEffectPreferNoSchedule}}, nil, ""},
		{"tolerated by Equal", []v1.Taint{gpu}, []v1.Toleration{{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}}, ""},
		{"wrong value", []v1.Taint{gpu}, []v1.Toleration{{Key: "dedicated", Value: "cpu"}}, ErrReasonUntolerated},
		{"tolerated by Exists", []v1.Taint{gpu}, []v1.Toleration{{Operator: v1.TolerationOpExists}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ni := framework.NewNodeInfo(&v1.Node{Spec: v1.NodeSpec{Taints: tt.taints}})
			st := Plugin{}.Filter(context.Background(), nil, &v1.Pod{Spec: v1.PodSpec{Tolerations: tt.tolerations}}, ni)
			if st.Message() != tt.want {
				t.Errorf("got %q, want %q", st.Message(), tt.want)
			}
		})
	}
}

func TestScorePrefersFewerPreferNoScheduleTaints(t *testing.T) {
	prefer := func(k string) v1.Taint { return v1.Taint{Key: k, Effect: v1.TaintEffectPreferNoSchedule} }
	nodes := [][]v1.Taint{nil, {prefer("a")}, {prefer("a"), prefer("b")}}
	pod := &v1.Pod{}
	scores := make([]framework.NodeScore, len(nodes))
	for i, taints := range nodes {
		sc, _ := Plugin{}.Score(context.Background(), nil, pod, framework.NewNodeInfo(&v1.Node{Spec: v1.NodeSpec{Taints: taints}}))
		scores[i].Score = sc
	}
	_ = Plugin{}.NormalizeScore(context.Background(), nil, pod, scores)
	if scores[0].Score != 100 || scores[1].Score != 50 || scores[2].Score != 0 {
		t.Errorf("normalized scores %+v, want 100, 50, 0", scores)
	}
}
