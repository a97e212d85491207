package containerd

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podtrace/podtrace/engine/kubelet/runtime"
)

func TestResourcesFor(t *testing.T) {
	q := resource.MustParse
	for _, tc := range []struct {
		name string
		in   v1.ResourceRequirements
		want *runtime.Resources
	}{
		{"none", v1.ResourceRequirements{}, nil},
		{"limits only", v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: q("200m"), v1.ResourceMemory: q("64Mi")}},
			&runtime.Resources{CPUShares: 204, CPUQuota: 20000, CPUPeriod: 100000, MemoryLimitBytes: 64 << 20}},
		{"request only", v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: q("1")}},
			&runtime.Resources{CPUShares: 1024}},
		{"tiny", v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: q("1m")}},
			&runtime.Resources{CPUShares: 2, CPUQuota: 1000, CPUPeriod: 100000}},
		{"memory only", v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: q("1Gi")}},
			&runtime.Resources{CPUShares: 2, MemoryLimitBytes: 1 << 30}},
	} {
		got := ResourcesFor(tc.in)
		if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
