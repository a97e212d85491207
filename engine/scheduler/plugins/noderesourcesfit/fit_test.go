package noderesourcesfit

import (
	"context"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podtrace/podtrace/engine/scheduler/framework"
)

func res(cpu, mem, pods string) v1.ResourceList {
	l := v1.ResourceList{}
	for name, v := range map[v1.ResourceName]string{v1.ResourceCPU: cpu, v1.ResourceMemory: mem, v1.ResourcePods: pods} {
		if v != "" {
			l[name] = resource.MustParse(v)
		}
	}
	return l
}

func pod(uid, cpu, mem string) *v1.Pod {
	p := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Resources: v1.ResourceRequirements{Requests: res(cpu, mem, "")}}}}}
	p.UID = types.UID("uid-" + uid)
	return p
}

func TestFilter(t *testing.T) {
	tests := []struct {
		name     string
		alloc    v1.ResourceList
		existing []*v1.Pod
		pod      *v1.Pod
		reasons  []string
		code     framework.Code
	}{
		{"fits", res("2", "4Gi", "110"), nil, pod("1", "1", "1Gi"), nil, framework.Success},
		{"best effort always fits resources", res("1", "1Gi", "110"), []*v1.Pod{pod("a", "1", "1Gi")}, pod("1", "", ""), nil, framework.Success},
		{"insufficient cpu, resolvable", res("2", "4Gi", "110"), []*v1.Pod{pod("a", "1500m", "")}, pod("1", "1", ""), []string{"Insufficient cpu"}, framework.Unschedulable},
		{"larger than the node", res("2", "4Gi", "110"), nil, pod("1", "3", ""), []string{"Insufficient cpu"}, framework.UnschedulableAndUnresolvable},
		{"cpu and memory", res("2", "4Gi", "110"), []*v1.Pod{pod("a", "2", "4Gi")}, pod("1", "1", "1Gi"), []string{"Insufficient cpu", "Insufficient memory"}, framework.Unschedulable},
		{"too many pods", res("2", "4Gi", "1"), []*v1.Pod{pod("a", "", "")}, pod("1", "", ""), []string{"Too many pods"}, framework.Unschedulable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pis []*framework.PodInfo
			for _, p := range tt.existing {
				pis = append(pis, framework.NewPodInfo(p))
			}
			ni := framework.NewNodeInfo(&v1.Node{Status: v1.NodeStatus{Allocatable: tt.alloc}}, pis...)
			state := framework.NewCycleState()
			_, _ = Plugin{}.PreFilter(context.Background(), state, tt.pod)
			st := Plugin{}.Filter(context.Background(), state, tt.pod, ni)
			if !reflect.DeepEqual(st.Reasons(), tt.reasons) || st.Code() != tt.code {
				t.Errorf("got %v %q, want %v %q", st.Code(), st.Reasons(), tt.code, tt.reasons)
			}
		})
	}
}

func TestLeastAllocatedScore(t *testing.T) {
	tests := []struct {
		name     string
		existing []*v1.Pod
		pod      *v1.Pod
		want     int64
	}{
		// (4000-1000)/4000 → 75 and (8Gi-2Gi)/8Gi → 75.
		{"empty node", nil, pod("1", "1", "2Gi"), 75},
		// cpu (4000-3000)/4000 = 25, memory (8Gi-4Gi)/8Gi = 50: (25+50)/2.
		{"half used", []*v1.Pod{pod("a", "2", "2Gi")}, pod("1", "1", "2Gi"), 37},
		// No requests: 100m and 200Mi assumed. cpu 3900/4000 → 97, mem (8192-200)/8192 → 97.
		{"best effort counts defaults", nil, pod("1", "", ""), 97},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pis []*framework.PodInfo
			for _, p := range tt.existing {
				pis = append(pis, framework.NewPodInfo(p))
			}
			ni := framework.NewNodeInfo(&v1.Node{Status: v1.NodeStatus{Allocatable: res("4", "8Gi", "110")}}, pis...)
			state := framework.NewCycleState()
			Plugin{}.PreScore(context.Background(), state, tt.pod, nil)
			got, _ := Plugin{}.Score(context.Background(), state, tt.pod, ni)
			if got != tt.want {
				t.Errorf("score %d, want %d", got, tt.want)
			}
		})
	}
}
