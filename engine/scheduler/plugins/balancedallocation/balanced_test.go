package balancedallocation

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podtrace/podtrace/engine/scheduler/framework"
)

func req(cpu, mem string) v1.ResourceList {
	l := v1.ResourceList{}
	if cpu != "" {
		l[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[v1.ResourceMemory] = resource.MustParse(mem)
	}
	return l
}

func pod(cpu, mem string) *v1.Pod {
	return &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Resources: v1.ResourceRequirements{Requests: req(cpu, mem)}}}}}
}

func TestScore(t *testing.T) {
	tests := []struct {
		name     string
		existing *v1.Pod
		pod      *v1.Pod
		want     int64
	}{
		// Empty node, balanced pod (25% cpu, 25% memory): with=100, without=100 → 50+(50+0)/2 = 75.
		{"balanced pod on empty node", nil, pod("1", "2Gi"), 75},
		// Unbalanced pod (50% cpu, 0% memory): with = 75, without = 100 → 50+(50-25)/2 = 62.
		{"unbalanced pod on empty node", nil, pod("2", "1"), 62},
		// Node at 50% cpu/0% memory; the pod adds memory only → balance improves from 75 to 100 → 87.
		{"pod that rebalances", pod("2", ""), pod("", "4Gi"), 87},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pis []*framework.PodInfo
			if tt.existing != nil {
				tt.existing.UID = "existing"
				pis = append(pis, framework.NewPodInfo(tt.existing))
			}
			ni := framework.NewNodeInfo(&v1.Node{Status: v1.NodeStatus{Allocatable: req("4", "8Gi")}}, pis...)
			state := framework.NewCycleState()
			if (Plugin{}).PreScore(context.Background(), state, tt.pod, nil).IsSkip() {
				t.Fatal("skipped a pod with requests")
			}
			got, _ := Plugin{}.Score(context.Background(), state, tt.pod, ni)
			if got != tt.want {
				t.Errorf("score %d, want %d", got, tt.want)
			}
		})
	}
}

func TestBestEffortSkipped(t *testing.T) {
	if !(Plugin{}).PreScore(context.Background(), framework.NewCycleState(), pod("", ""), nil).IsSkip() {
		t.Error("best-effort pod should skip BalancedAllocation, as upstream")
	}
}
