package framework

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func rl(cpu, mem string) v1.ResourceList {
	l := v1.ResourceList{}
	if cpu != "" {
		l[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[v1.ResourceMemory] = resource.MustParse(mem)
	}
	return l
}

func TestPodRequests(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	tests := []struct {
		name     string
		spec     v1.PodSpec
		nonZero  bool
		cpu, mem int64
	}{
		{"none", v1.PodSpec{Containers: []v1.Container{{}}}, false, 0, 0},
		{"none, scoring view", v1.PodSpec{Containers: []v1.Container{{}}}, true, 100, 200 * 1024 * 1024},
		{"sum of containers", v1.PodSpec{Containers: []v1.Container{
			{Resources: v1.ResourceRequirements{Requests: rl("500m", "1Gi")}},
			{Resources: v1.ResourceRequirements{Requests: rl("250m", "")}}}}, false, 750, 1 << 30},
		{"init container larger", v1.PodSpec{
			InitContainers: []v1.Container{{Resources: v1.ResourceRequirements{Requests: rl("2", "")}}},
			Containers:     []v1.Container{{Resources: v1.ResourceRequirements{Requests: rl("1", "")}}}}, false, 2000, 0},
		{"sidecar adds", v1.PodSpec{
			InitContainers: []v1.Container{{RestartPolicy: &always, Resources: v1.ResourceRequirements{Requests: rl("1", "")}}},
			Containers:     []v1.Container{{Resources: v1.ResourceRequirements{Requests: rl("1", "")}}}}, false, 2000, 0},
		{"overhead", v1.PodSpec{Overhead: rl("100m", ""),
			Containers: []v1.Container{{Resources: v1.ResourceRequirements{Requests: rl("1", "")}}}}, false, 1100, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := PodRequests(&v1.Pod{Spec: tt.spec}, tt.nonZero)
			if r.MilliCPU != tt.cpu || r.Memory != tt.mem {
				t.Errorf("got cpu=%d mem=%d, want cpu=%d mem=%d", r.MilliCPU, r.Memory, tt.cpu, tt.mem)
			}
		})
	}
}

func TestNodeInfoAddRemove(t *testing.T) {
	node := &v1.Node{Status: v1.NodeStatus{Allocatable: rl("4", "8Gi")}}
	p := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{
		Resources: v1.ResourceRequirements{Requests: rl("1", "1Gi")},
		Ports:     []v1.ContainerPort{{HostPort: 80}},
	}}}}
	p.UID = "u1"
	ni := NewNodeInfo(node, NewPodInfo(p))
	if ni.Requested.MilliCPU != 1000 || len(ni.UsedPorts) != 1 || ni.UsedPorts[0] != (HostPort{"0.0.0.0", v1.ProtocolTCP, 80}) {
		t.Fatalf("after add: %+v %+v", ni.Requested, ni.UsedPorts)
	}
	c := ni.Clone()
	if !ni.RemovePod(p) || ni.Requested.MilliCPU != 0 || len(ni.UsedPorts) != 0 || len(ni.Pods) != 0 {
		t.Fatalf("after remove: %+v", ni)
	}
	if c.Requested.MilliCPU != 1000 || len(c.Pods) != 1 {
		t.Fatalf("clone changed with original: %+v", c.Requested)
	}
}
