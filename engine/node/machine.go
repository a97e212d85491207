package node

import (
	cadvisorapi "github.com/google/cadvisor/info/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	cadvisortest "k8s.io/kubernetes/pkg/kubelet/cadvisor/testing"
	"k8s.io/kubernetes/pkg/kubelet/cm"
)

// DefaultEphemeralStorage is a node's ephemeral-storage capacity when its
// spec names none.
var DefaultEphemeralStorage = resource.MustParse("100Gi")

// machine is cAdvisor for a simulated node: kubemark's fake, except that
// the machine has the cpu and memory of the node's spec, which the kubelet
// reports as the Node's capacity.
type machine struct {
	*cadvisortest.Fake
	cores  int
	memory uint64
}

func newMachine(name string, capacity v1.ResourceList) *machine {
	m := &machine{Fake: &cadvisortest.Fake{NodeName: name}, cores: 4, memory: 8 << 30}
	if q, ok := capacity[v1.ResourceCPU]; ok {
		m.cores = int((q.MilliValue() + 999) / 1000)
	}
	if q, ok := capacity[v1.ResourceMemory]; ok {
		m.memory = uint64(q.Value())
	}
	return m
}

// MachineInfo reports the node's cores and memory.
func (m *machine) MachineInfo() (*cadvisorapi.MachineInfo, error) {
	info, err := m.Fake.MachineInfo()
	if err != nil {
		return nil, err
	}
	info.NumCores, info.MemoryCapacity = m.cores, m.memory
	return info, nil
}

// containerManager is kubemark's stub container manager (no cgroups, no
// QoS hierarchy, nothing that needs root), reporting the node's
// ephemeral-storage capacity.
type containerManager struct {
	cm.ContainerManager
	storage resource.Quantity
}

func newContainerManager(capacity v1.ResourceList) *containerManager {
	s, ok := capacity[v1.ResourceEphemeralStorage]
	if !ok {
		s = DefaultEphemeralStorage
	}
	return &containerManager{ContainerManager: cm.NewStubContainerManager(), storage: s}
}

// GetCapacity returns the node's ephemeral storage.
func (c *containerManager) GetCapacity(localStorageCapacityIsolation bool) v1.ResourceList {
	if !localStorageCapacityIsolation {
		return v1.ResourceList{}
	}
	return v1.ResourceList{v1.ResourceEphemeralStorage: c.storage}
}
