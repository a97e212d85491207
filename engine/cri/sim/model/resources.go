package model

import (
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// UpdateResources applies an in-place resize to container id (CRI's
// UpdateContainerResources): its cgroup files change as `runc update`
// changes them.
func (r *Runtime) UpdateResources(id string, res *runtimeapi.LinuxContainerResources) error {
	r.mu.Lock()
	c, ok := r.containers[id]
	r.mu.Unlock()
	if !ok {
		return fmt.Errorf("rpc error: code = NotFound desc = container %q: %w", id, ErrNotFound)
	}
	c.fs.UpdateResources(res)
	return nil
}
