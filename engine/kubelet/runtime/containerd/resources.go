package containerd

import (
	v1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/engine/kubelet/runtime"
)

// Constants of the kubelet's CPU conversions (pkg/kubelet/cm/helpers_linux.go).
const (
	minShares      = 2
	sharesPerCPU   = 1024
	milliCPUToCPU  = 1000
	quotaPeriod    = 100000 // 100 ms, in µs
	minQuotaPeriod = 1000
)

// ResourcesFor converts a container's requests and limits into cgroup
// settings as the kubelet does: cpu.shares from the CPU request (the limit
// when no request), a CFS quota from the CPU limit, and the memory limit.
// It returns nil when the container sets neither.
func ResourcesFor(r v1.ResourceRequirements) *runtime.Resources {
	cpuReq, cpuLim := r.Requests.Cpu().MilliValue(), r.Limits.Cpu().MilliValue()
	if cpuReq == 0 {
		cpuReq = cpuLim
	}
	mem := r.Limits.Memory().Value()
	if cpuReq == 0 && cpuLim == 0 && mem == 0 {
		return nil
	}
	out := &runtime.Resources{MemoryLimitBytes: mem, CPUShares: minShares}
	if cpuReq > 0 {
		out.CPUShares = max(cpuReq*sharesPerCPU/milliCPUToCPU, minShares)
	}
	if cpuLim > 0 {
		out.CPUPeriod = quotaPeriod
		out.CPUQuota = max(cpuLim*quotaPeriod/milliCPUToCPU, minQuotaPeriod)
	}
	return out
}
