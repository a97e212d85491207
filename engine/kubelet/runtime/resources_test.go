package runtime

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestResourcesFor(t *testing.T) {
	q := resource.MustParse
	for _, tc := range []struct {
		name string
		in   v1.ResourceRequirements
		want *Resources
	}{
		{"none", v1.ResourceRequirements{}, &Resources{CPUShares: 2}},
		{"limits only", v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: q("200m"), v1.ResourceMemory: q("64Mi")}},
			&Resources{CPUShares: 204, CPUQuota: 20000, CPUPeriod: 100000, MemoryLimitBytes: 64 << 20}},
		{"request only", v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: q("1")}},
			&Resources{CPUShares: 1024}},
		{"tiny", v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: q("1m")}},
			&Resources{CPUShares: 2, CPUQuota: 1000, CPUPeriod: 100000}},
		{"request", v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: q("250m")}}, &Resources{CPUShares: 256}},
		{"limits", v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: q("500m"), v1.ResourceMemory: q("128Mi")}},
			&Resources{CPUShares: 512, CPUQuota: 50000, CPUPeriod: 100000, MemoryLimitBytes: 128 << 20}},
		{"memory only", v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: q("1Gi")}},
			&Resources{CPUShares: 2, MemoryLimitBytes: 1 << 30}},
	} {
		got := ResourcesFor(tc.in)
		if *got != *tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
