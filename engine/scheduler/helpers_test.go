package scheduler

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// makeNode returns a ready node with cpu and memory allocatable and 110 pods.
func makeNode(name, cpu, mem string, opts ...func(*v1.Node)) *v1.Node {
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU:    resource.MustParse(cpu),
			v1.ResourceMemory: resource.MustParse(mem),
			v1.ResourcePods:   resource.MustParse("110"),
		}},
	}
	n.Status.Capacity = n.Status.Allocatable
	for _, o := range opts {
		o(n)
	}
	return n
}

func withTaint(key, value string, effect v1.TaintEffect) func(*v1.Node) {
	return func(n *v1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: key, Value: value, Effect: effect})
	}
}

func withLabel(k, v string) func(*v1.Node) { return func(n *v1.Node) { n.Labels[k] = v } }

func cordoned(n *v1.Node) { n.Spec.Unschedulable = true }

var uidSeq int

// makePod returns a pending pod in default requesting cpu and memory ("" for none).
func makePod(name, cpu, mem string, opts ...func(*v1.Pod)) *v1.Pod {
	uidSeq++
	req := v1.ResourceList{}
	if cpu != "" {
		req[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		req[v1.ResourceMemory] = resource.MustParse(mem)
	}
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(fmt.Sprintf("uid-%s-%d", name, uidSeq))},
		Spec: v1.PodSpec{SchedulerName: DefaultSchedulerName, Containers: []v1.Container{{
			Name: "c", Image: "nginx", Resources: v1.ResourceRequirements{Requests: req},
		}}},
		Status: v1.PodStatus{Phase: v1.PodPending},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func onNode(node string) func(*v1.Pod) { return func(p *v1.Pod) { p.Spec.NodeName = node } }

func withPriority(prio int32) func(*v1.Pod) { return func(p *v1.Pod) { p.Spec.Priority = &prio } }

func withNodeSelector(k, v string) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{k: v} }
}

func withHostPort(port int32) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, v1.ContainerPort{ContainerPort: port, HostPort: port})
	}
}

func withToleration(key, value string, effect v1.TaintEffect) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.Tolerations = append(p.Spec.Tolerations, v1.Toleration{Key: key, Operator: v1.TolerationOpEqual, Value: value, Effect: effect})
	}
}

func neverPreempt(p *v1.Pod) {
	never := v1.PreemptNever
	p.Spec.PreemptionPolicy = &never
}

// withNodeNameAffinity pins the pod like the DaemonSet controller does.
func withNodeNameAffinity(node string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
			NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{{
				Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{node}}}}}}}}
	}
}
