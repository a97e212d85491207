package runtime

import v1 "k8s.io/api/core/v1"

// The kubelet's CPU conversions (pkg/kubelet/cm/helpers_linux.go).
const (
	minShares      = 2
	sharesPerCPU   = 1024
	milliCPUToCPU  = 1000
	quotaPeriod    = 100000 // 100 ms, in µs
	minQuotaPeriod = 1000
)

// ResourcesFor converts a container's requests and limits into cgroup
// settings as the kubelet does: cpu.shares from the CPU request (the limit
// when there is no request; the minimum, 2, when neither is set), a CFS quota
// from the CPU limit over a 100 ms period, and the memory limit.
func ResourcesFor(r v1.ResourceRequirements) *Resources {
	out := &Resources{CPUShares: minShares}
	req, hasReq := r.Requests[v1.ResourceCPU]
	lim, hasLim := r.Limits[v1.ResourceCPU]
	if !hasReq && hasLim {
		req, hasReq = lim, true
	}
	if hasReq {
		out.CPUShares = max(minShares, req.MilliValue()*sharesPerCPU/milliCPUToCPU)
	}
	if hasLim {
		out.CPUPeriod = quotaPeriod
		out.CPUQuota = max(minQuotaPeriod, lim.MilliValue()*quotaPeriod/milliCPUToCPU)
	}
	if mem, ok := r.Limits[v1.ResourceMemory]; ok {
		out.MemoryLimitBytes = mem.Value()
	}
	return out
}
