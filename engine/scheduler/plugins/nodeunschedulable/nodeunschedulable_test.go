package nodeunschedulable

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/engine/scheduler/framework"
)

func TestFilter(t *testing.T) {
	tolerate := []v1.Toleration{{Key: v1.TaintNodeUnschedulable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}
	tests := []struct {
		name        string
		cordoned    bool
		tolerations []v1.Toleration
		want        string
	}{
		{"schedulable node", false, nil, ""},
		{"cordoned node", true, nil, "node(s) were unschedulable"},
		{"cordoned but tolerated", true, tolerate, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ni := framework.NewNodeInfo(&v1.Node{Spec: v1.NodeSpec{Unschedulable: tt.cordoned}})
			st := Plugin{}.Filter(context.Background(), framework.NewCycleState(), &v1.Pod{Spec: v1.PodSpec{Tolerations: tt.tolerations}}, ni)
			if st.Message() != tt.want {
				t.Errorf("got %q, want %q", st.Message(), tt.want)
			}
			if tt.want != "" && st.Code() != framework.UnschedulableAndUnresolvable {
				t.Errorf("code %v", st.Code())
			}
		})
	}
}
