package sim

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podtrace/podtrace/engine/cri"
)

// A container's status reports the CPU and memory settings it was created
// with, then those of an in-place resize (UpdateContainerResources), as
// containerd reports the ones it applied: the kubelet reads a resize's
// outcome from there. The container's cgroup files show them too.
func TestContainerStatusReportsItsResources(t *testing.T) {
	ctx := context.Background()
	created := &runtimeapi.LinuxContainerResources{CpuPeriod: 100000, CpuQuota: 20000, CpuShares: 102, MemoryLimitInBytes: 128 << 20}
	r, id := runContainer(t, &runtimeapi.ContainerConfig{Image: &runtimeapi.ImageSpec{Image: "nginx:1.27"},
		Linux: &runtimeapi.LinuxContainerConfig{Resources: created}})
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
	cgroup := func(when, file, want string) {
		t.Helper()
		out, _, err := r.ExecSync(ctx, id, []string{"/bin/sh", "-c", "head -n 1 /sys/fs/cgroup/" + file}, time.Minute)
		if err != nil || string(out) != want+"\n" {
			t.Errorf("%s: head -n 1 /sys/fs/cgroup/%s: %q, %v; want %q", when, file, out, err, want)
		}
	}
	cgroup("created", "cpu.max", "20000 100000")
	cgroup("created", "memory.max", "134217728")
	resized := &runtimeapi.LinuxContainerResources{CpuPeriod: 100000, CpuQuota: 30000, CpuShares: 153, MemoryLimitInBytes: 256 << 20}
	if err := r.UpdateContainerResources(ctx, id, &runtimeapi.ContainerResources{Linux: resized}); err != nil {
		t.Fatal(err)
	}
	if got := reported(); !proto.Equal(got, resized) {
		t.Errorf("status reports %v after the resize, want %v", got, resized)
	}
	cgroup("resized", "cpu.max", "30000 100000")
	cgroup("resized", "memory.max", "268435456")
	if err := r.UpdateContainerResources(ctx, "nothere", &runtimeapi.ContainerResources{Linux: resized}); err == nil {
		t.Error("resizing a container that does not exist succeeded")
	}
}

// runContainer runs a container of cfg (named web, logging to web/0.log)
// in a pod of its own on a new simulated runtime, its image pulled.
func runContainer(t *testing.T, cfg *runtimeapi.ContainerConfig) (*Runtime, string) {
	t.Helper()
	return runContainerIn(t, &runtimeapi.PodSandboxConfig{}, cfg)
}

// runContainerIn is runContainer in a pod of sb's settings (its metadata
// and log directory are runContainer's).
func runContainerIn(t *testing.T, sb *runtimeapi.PodSandboxConfig, cfg *runtimeapi.ContainerConfig) (*Runtime, string) {
	t.Helper()
	ctx := context.Background()
	r, err := New(Config{Node: "node-1", PodCIDR: "10.244.9.0/24", Seed: 1, Speed: func() float64 { return cri.MaxSpeed }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Shutdown(ctx) }) //nolint:errcheck
	for _, m := range append(cfg.GetMounts(), &runtimeapi.Mount{Image: cfg.GetImage()}) {
		if m.GetImage() != nil {
			if _, err := r.PullImage(ctx, &runtimeapi.ImageSpec{Image: imageRef(m.GetImage())}, nil, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	sb.Metadata, sb.LogDirectory = &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "u1"}, t.TempDir()
	sandbox, err := r.RunPodSandbox(ctx, sb, "")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Metadata, cfg.LogPath = &runtimeapi.ContainerMetadata{Name: "web"}, "web/0.log"
	id, err := r.CreateContainer(ctx, sandbox, cfg, sb)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	return r, id
}
