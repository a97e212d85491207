package sim

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podtrace/podtrace/engine/cri"
)

// A container's status reports the CPU and memory settings it was created
// with, then those of an in-place resize (UpdateContainerResources), as
// containerd reports the ones it applied: the kubelet reads a resize's
// outcome from there.
func TestContainerStatusReportsItsResources(t *testing.T) {
	ctx := context.Background()
	r, err := New(Config{Node: "node-1", PodCIDR: "10.244.9.0/24", Seed: 1, Speed: func() float64 { return cri.MaxSpeed }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Shutdown(ctx) //nolint:errcheck
	image := &runtimeapi.ImageSpec{Image: "nginx:1.27"}
	if _, err := r.PullImage(ctx, image, nil, nil); err != nil {
		t.Fatal(err)
	}
	sb := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "u1"}, LogDirectory: t.TempDir()}
	sandbox, err := r.RunPodSandbox(ctx, sb, "")
	if err != nil {
		t.Fatal(err)
	}
	created := &runtimeapi.LinuxContainerResources{CpuPeriod: 100000, CpuQuota: 20000, CpuShares: 102, MemoryLimitInBytes: 128 << 20}
	id, err := r.CreateContainer(ctx, sandbox, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "web"},
		Image: image, LogPath: "web/0.log", Linux: &runtimeapi.LinuxContainerConfig{Resources: created}}, sb)
	if err != nil {
		t.Fatal(err)
	}
	reported := func() *runtimeapi.LinuxContainerResources {
		t.Helper()
		st, err := r.ContainerStatus(ctx, id, false)
		if err != nil {
			t.Fatal(err)
		}
		return st.GetStatus().GetResources().GetLinux()
	}
	if got := reported(); !proto.Equal(got, created) {
		t.Errorf("status reports %v, want the created %v", got, created)
	}
	resized := &runtimeapi.LinuxContainerResources{CpuPeriod: 100000, CpuQuota: 30000, CpuShares: 153, MemoryLimitInBytes: 256 << 20}
	if err := r.UpdateContainerResources(ctx, id, &runtimeapi.ContainerResources{Linux: resized}); err != nil {
		t.Fatal(err)
	}
	if got := reported(); !proto.Equal(got, resized) {
		t.Errorf("status reports %v after the resize, want %v", got, resized)
	}
	if err := r.UpdateContainerResources(ctx, "nothere", &runtimeapi.ContainerResources{Linux: resized}); err == nil {
		t.Error("resizing a container that does not exist succeeded")
	}
}
