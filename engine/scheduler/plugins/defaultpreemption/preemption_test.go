package defaultpreemption

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podtrace/podtrace/engine/scheduler/framework"
)

// handle is a fake framework.Handle built from function fields.
type handle struct {
	filter func(*framework.NodeInfo) *framework.Status
	nodes  []*framework.NodeInfo
}

func (h handle) RunFilterPlugins(_ context.Context, _ *framework.CycleState, _ *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	return h.filter(ni)
}
func (h handle) NodeInfos() []*framework.NodeInfo { return h.nodes }

func pod(name string, prio int32, cpu string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name)}, Spec: v1.PodSpec{Priority: &prio,
		Containers: []v1.Container{{Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}}}}
}

func node(name string, pods ...*v1.Pod) *framework.NodeInfo {
	var pis []*framework.PodInfo
	for _, p := range pods {
		pis = append(pis, framework.NewPodInfo(p))
	}
	return framework.NewNodeInfo(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1.NodeStatus{Allocatable: v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("2"), v1.ResourcePods: resource.MustParse("110")}}}, pis...)
}

// cpuFilter fits the preemptor's 1 cpu when at most 1 cpu is requested on the node.
func cpuFilter(ni *framework.NodeInfo) *framework.Status {
	if ni.Requested.MilliCPU+1000 > ni.Allocatable.MilliCPU {
		return framework.NewStatus(framework.Unschedulable, "Insufficient cpu")
	}
	return nil
}

func TestPostFilter(t *testing.T) {
	unsched := framework.NewStatus(framework.Unschedulable, "Insufficient cpu")
	tests := []struct {
		name        string
		nodes       []*framework.NodeInfo
		statuses    map[string]*framework.Status
		want        string
		wantNode    string
		wantVictims []string
	}{
		{
			name:     "no lower-priority pods",
			nodes:    []*framework.NodeInfo{node("a", pod("x", 10, "1500m"))},
			statuses: map[string]*framework.Status{"a": unsched},
			want:     "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
		},
		{
			name:     "unresolvable nodes are not tried",
			nodes:    []*framework.NodeInfo{node("a"), node("b")},
			statuses: map[string]*framework.Status{"a": framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) had untolerated taint(s)"), "b": framework.NewStatus(framework.UnschedulableAndUnresolvable, "x")},
			want:     "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.",
		},
		{
			name:        "evicts only what is needed, the least important first",
			nodes:       []*framework.NodeInfo{node("a", pod("low", 1, "500m"), pod("lower", 0, "1")), node("b", pod("x", 10, "1500m"))},
			statuses:    map[string]*framework.Status{"a": unsched, "b": unsched},
			wantNode:    "a",
			wantVictims: []string{"lower"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl, _ := New(handle{filter: cpuFilter, nodes: tt.nodes})
			state := framework.NewCycleState()
			st := pl.(*Plugin).PostFilter(context.Background(), state, pod("preemptor", 5, "1"), &framework.Diagnosis{NodeToStatus: tt.statuses})
			if st.Message() != tt.want {
				t.Fatalf("message %q, want %q", st.Message(), tt.want)
			}
			if tt.wantNode == "" {
				return
			}
			v, err := state.Read(ResultKey)
			if err != nil {
				t.Fatal(err)
			}
			r := v.(*Result)
			var names []string
			for _, p := range r.Victims {
				names = append(names, p.Name)
			}
			if r.Node != tt.wantNode || len(names) != len(tt.wantVictims) || names[0] != tt.wantVictims[0] {
				t.Errorf("result %s %v, want %s %v", r.Node, names, tt.wantNode, tt.wantVictims)
			}
		})
	}
}

func TestNeverPreempts(t *testing.T) {
	pl, _ := New(handle{filter: cpuFilter})
	p := pod("p", 5, "1")
	never := v1.PreemptNever
	p.Spec.PreemptionPolicy = &never
	st := pl.(*Plugin).PostFilter(context.Background(), framework.NewCycleState(), p, &framework.Diagnosis{})
	if st.Message() != "preemption: not eligible due to preemptionPolicy=Never." {
		t.Errorf("got %q", st.Message())
	}
}
