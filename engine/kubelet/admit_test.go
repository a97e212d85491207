package kubelet

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podtrace/podtrace/engine/kubelet/runtime"
)

func TestLinuxResources(t *testing.T) {
	q := resource.MustParse
	tests := []struct {
		req, lim v1.ResourceList
		want     runtime.Resources
	}{
		{want: runtime.Resources{CPUShares: 2}},
		{req: v1.ResourceList{v1.ResourceCPU: q("250m")}, want: runtime.Resources{CPUShares: 256}},
		{lim: v1.ResourceList{v1.ResourceCPU: q("500m"), v1.ResourceMemory: q("128Mi")},
			want: runtime.Resources{CPUShares: 512, CPUQuota: 50000, CPUPeriod: 100000, MemoryLimitBytes: 128 << 20}},
		{req: v1.ResourceList{v1.ResourceCPU: q("1m")}, lim: v1.ResourceList{v1.ResourceCPU: q("1m")},
			want: runtime.Resources{CPUShares: 2, CPUQuota: 1000, CPUPeriod: 100000}},
	}
	for i, tt := range tests {
		got := linuxResources(v1.Container{Resources: v1.ResourceRequirements{Requests: tt.req, Limits: tt.lim}})
		if *got != tt.want {
			t.Errorf("%d: %+v, want %+v", i, *got, tt.want)
		}
	}
}
