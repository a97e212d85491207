package node

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	cadvisorapi "github.com/google/cadvisor/info/v1"
	cadvisorapiv2 "github.com/google/cadvisor/info/v2"
	"github.com/google/uuid"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"k8s.io/klog/v2"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	cadvisortest "k8s.io/kubernetes/pkg/kubelet/cadvisor/testing"
	"k8s.io/kubernetes/pkg/kubelet/cm"
	"k8s.io/utils/ptr"
)

// DefaultEphemeralStorage is a node's ephemeral-storage capacity when its
// spec names none.
var DefaultEphemeralStorage = resource.MustParse("100Gi")

// ephemeralStorage is the node's ephemeral-storage capacity: its spec's,
// or DefaultEphemeralStorage.
func ephemeralStorage(capacity v1.ResourceList) resource.Quantity {
	if s, ok := capacity[v1.ResourceEphemeralStorage]; ok {
		return s
	}
	return DefaultEphemeralStorage
}

// machine is cAdvisor for a simulated node: kubemark's fake, but with the
// node's cpu and memory (which the kubelet reports as the Node's capacity),
// this machine's kernel and OS, IDs of the node's own, one disk of its
// ephemeral-storage capacity (fs) and a root cgroup. The fake has neither
// disks of any size nor a root cgroup, so the kubelet's summary API, which
// its eviction manager reads every 10 seconds, always failed, and its
// image garbage collector sent a Warning InvalidDiskCapacity no real node
// sends; its OS was a Debian 7 with kernel 3.16. The pods' own usage comes
// from the runtime, over CRI.
type machine struct {
	*cadvisortest.Fake
	info    cadvisorapi.MachineInfo
	version cadvisorapi.VersionInfo
	disk    uint64
	boot    time.Time
}

// newMachine returns the machine of the node name with capacity. Its
// machine ID and system UUID stay the node's across restarts; its boot ID
// is new at each start, so that the kubelet reports a node started again
// on its data dir as rebooted (Warning Rebooted).
func newMachine(name string, capacity v1.ResourceList) *machine {
	disk := ephemeralStorage(capacity)
	id := uuid.NewSHA1(uuid.NameSpaceURL, []byte("podtrace://"+name))
	m := &machine{Fake: &cadvisortest.Fake{NodeName: name}, disk: uint64(disk.Value()), boot: time.Now(),
		info: cadvisorapi.MachineInfo{NumCores: 4, MemoryCapacity: 8 << 30, InstanceID: cadvisorapi.InstanceID(name),
			MachineID: hex.EncodeToString(id[:]), SystemUUID: strings.ToUpper(id.String()), BootID: uuid.NewString()}}
	m.version.KernelVersion, m.version.ContainerOsVersion = hostOS()
	if q, ok := capacity[v1.ResourceCPU]; ok {
		m.info.NumCores = int((q.MilliValue() + 999) / 1000)
	}
	if q, ok := capacity[v1.ResourceMemory]; ok {
		m.info.MemoryCapacity = uint64(q.Value())
	}
	return m
}

// MachineInfo reports the node's cores, memory and IDs.
func (m *machine) MachineInfo() (*cadvisorapi.MachineInfo, error) {
	info := m.info
	return &info, nil
}

// VersionInfo reports the kernel and operating system podtrace runs on
// (hostOS): the Node's kernelVersion and osImage.
func (m *machine) VersionInfo() (*cadvisorapi.VersionInfo, error) {
	v := m.version
	return &v, nil
}

// ContainerInfoV2 reports the node's root cgroup ("/"): its memory, and
// no use of it or of the cores yet (simulated processes use none). It
// knows no other cgroup, as the fake.
func (m *machine) ContainerInfoV2(name string, opts cadvisorapiv2.RequestOptions) (map[string]cadvisorapiv2.ContainerInfo, error) {
	if name != "/" {
		return m.Fake.ContainerInfoV2(name, opts)
	}
	return map[string]cadvisorapiv2.ContainerInfo{name: {
		Spec: cadvisorapiv2.ContainerSpec{CreationTime: m.boot, HasCpu: true, HasMemory: true,
			Memory: cadvisorapiv2.MemorySpec{Limit: m.info.MemoryCapacity}},
		Stats: []*cadvisorapiv2.ContainerStats{{Timestamp: time.Now(),
			Cpu: &cadvisorapi.CpuStats{}, Memory: &cadvisorapi.MemoryStats{}}},
	}}, nil
}

// fs is the node's disk, with all of its space and inodes (one per 4 KiB)
// available. The kubelet takes the space its images and logs use from the
// runtime (CRI ImageFsInfo) and its own directories, so the summary's used
// and available bytes need not add up to the capacity; but with nothing
// used here, the image garbage collector never finds the disk over its
// threshold and deletes the simulated images.
func (m *machine) fs(mountpoint string) cadvisorapiv2.FsInfo {
	inodes := m.disk / 4096
	return cadvisorapiv2.FsInfo{Timestamp: time.Now(), Device: "podtrace", Mountpoint: mountpoint,
		Capacity: m.disk, Available: m.disk, Inodes: &inodes, InodesFree: &inodes}
}

// RootFsInfo reports the node's disk, where the kubelet keeps its files.
func (m *machine) RootFsInfo() (cadvisorapiv2.FsInfo, error) { return m.fs("/"), nil }

// ImagesFsInfo reports the node's disk, where the runtime keeps images.
func (m *machine) ImagesFsInfo(context.Context) (cadvisorapiv2.FsInfo, error) {
	return m.fs("/"), nil
}

// ContainerFsInfo reports the node's disk, where containers write.
func (m *machine) ContainerFsInfo(context.Context) (cadvisorapiv2.FsInfo, error) {
	return m.fs("/"), nil
}

// GetDirFsInfo reports the node's disk, which holds every directory.
func (m *machine) GetDirFsInfo(path string) (cadvisorapiv2.FsInfo, error) {
	return m.fs(path), nil
}

// containerManager is kubemark's stub container manager (no cgroups, no
// QoS hierarchy, nothing that needs root), reporting the node's
// ephemeral-storage capacity.
type containerManager struct {
	cm.ContainerManager
	storage resource.Quantity
}

func newContainerManager(capacity v1.ResourceList) *containerManager {
	return &containerManager{ContainerManager: cm.NewStubContainerManager(), storage: ephemeralStorage(capacity)}
}

// GetPodCgroupRoot is "/", the root cgroup, as for a real kubelet without
// QoS cgroups (cgroupsPerQOS false): the eviction manager reads the pods'
// usage there (the stub's "" is no cgroup, and it logged so every 10s).
func (c *containerManager) GetPodCgroupRoot() string { return "/" }

// GetCapacity returns the node's ephemeral storage.
func (c *containerManager) GetCapacity(localStorageCapacityIsolation bool) v1.ResourceList {
	if !localStorageCapacityIsolation {
		return v1.ResourceList{}
	}
	return v1.ResourceList{v1.ResourceEphemeralStorage: c.storage}
}

// NewPodContainerManager returns the stub's pod container manager, with
// pod-level cgroup settings that always match what the pod is allocated:
// the simulated node keeps no pod cgroups, so an in-place resize goes on
// to the containers (UpdateContainerResources), whose runtime reports the
// new settings. kubemark's stub refuses them ("not implemented"), and
// without QoS cgroups the real kubelet has none to read, either of which
// fails every in-place resize.
func (c *containerManager) NewPodContainerManager() cm.PodContainerManager {
	return allocatedPodCgroups{c.ContainerManager.NewPodContainerManager()}
}

// allocatedPodCgroups answers for pod-level cgroups as if each were set to
// its pod's allocation.
type allocatedPodCgroups struct{ cm.PodContainerManager }

// GetPodCgroupConfig returns the settings the pod's allocation gives its
// cgroup (CPU quota over the kubelet's default 100ms period, CPU shares,
// memory limit).
func (allocatedPodCgroups) GetPodCgroupConfig(pod *v1.Pod, name v1.ResourceName) (*cm.ResourceConfig, error) {
	const period = 100000 // µs, the kubelet's default CFS quota period
	all := cm.ResourceConfigForPod(pod, true, period, false, kubeletconfig.NoneMemoryReservationPolicy)
	if all == nil {
		return nil, fmt.Errorf("no cgroup settings for pod %s/%s on this platform", pod.Namespace, pod.Name)
	}
	// A cgroup always has each setting (ResourceConfigForPod always gives
	// the CPU shares): no limit reads as a quota of -1 over the default
	// period, and a memory limit of 0 (none).
	switch name {
	case v1.ResourceCPU:
		c := &cm.ResourceConfig{CPUShares: all.CPUShares, CPUQuota: all.CPUQuota, CPUPeriod: all.CPUPeriod}
		if c.CPUQuota == nil {
			c.CPUQuota = ptr.To[int64](-1)
		}
		if c.CPUPeriod == nil {
			c.CPUPeriod = ptr.To[uint64](period)
		}
		return c, nil
	case v1.ResourceMemory:
		if all.Memory == nil {
			return &cm.ResourceConfig{Memory: ptr.To[int64](0)}, nil
		}
		return &cm.ResourceConfig{Memory: all.Memory}, nil
	}
	return nil, fmt.Errorf("no pod cgroup setting for %s", name)
}

// SetPodCgroupConfig has no pod cgroup to write to.
func (allocatedPodCgroups) SetPodCgroupConfig(klog.Logger, *v1.Pod, *cm.ResourceConfig) error {
	return nil
}
