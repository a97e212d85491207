package nodeports

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/engine/scheduler/framework"
)

func podWith(ports ...v1.ContainerPort) *v1.Pod {
	return &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Ports: ports}}}}
}

func TestFilter(t *testing.T) {
	tcp80 := v1.ContainerPort{HostPort: 80}
	tests := []struct {
		name     string
		existing *v1.Pod
		pod      *v1.Pod
		want     string
	}{
		{"no host ports", podWith(tcp80), podWith(v1.ContainerPort{ContainerPort: 80}), ""},
		{"free port", podWith(tcp80), podWith(v1.ContainerPort{HostPort: 8080}), ""},
		{"same port", podWith(tcp80), podWith(tcp80), ErrReason},
		{"same port, other protocol", podWith(tcp80), podWith(v1.ContainerPort{HostPort: 80, Protocol: v1.ProtocolUDP}), ""},
		{"specific IP vs wildcard", podWith(tcp80), podWith(v1.ContainerPort{HostPort: 80, HostIP: "10.0.0.1"}), ErrReason},
		{"two specific IPs", podWith(v1.ContainerPort{HostPort: 80, HostIP: "10.0.0.2"}), podWith(v1.ContainerPort{HostPort: 80, HostIP: "10.0.0.1"}), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.existing.UID = "existing"
			ni := framework.NewNodeInfo(&v1.Node{}, framework.NewPodInfo(tt.existing))
			state := framework.NewCycleState()
			if _, pre := (Plugin{}).PreFilter(context.Background(), state, tt.pod); pre.IsSkip() {
				if tt.want != "" {
					t.Fatal("skipped a pod with host ports")
				}
				return
			}
			st := Plugin{}.Filter(context.Background(), state, tt.pod, ni)
			if st.Message() != tt.want {
				t.Errorf("got %q, want %q", st.Message(), tt.want)
			}
			if tt.want != "" && st.Code() != framework.Unschedulable {
				t.Errorf("code %v, want Unschedulable", st.Code())
			}
		})
	}
}
