package sim

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podtrace/podtrace/engine/cri"
	"github.com/podtrace/podtrace/engine/cri/sim/model"
	"github.com/podtrace/podtrace/internal/waittest"
)

// A node keeps its pulled images across a restart, as containerd's content
// store does: the kubelet then finds the image present and does not pull
// again ("already present on machine"). An image never pulled stays absent.
func TestImagesSurviveARestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := Config{Node: "node-1", PodCIDR: "10.244.9.0/24", Seed: 1, Speed: func() float64 { return cri.MaxSpeed },
		StateFile: filepath.Join(dir, "node-1.json"), Dir: dir}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := r.PullImage(ctx, &runtimeapi.ImageSpec{Image: "nginx:1.27"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	r, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Shutdown(ctx) //nolint:errcheck
	st, err := r.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "nginx:1.27"}, false)
	if err != nil || st.GetImage() == nil {
		t.Fatalf("after a restart nginx:1.27 is not on the node: %v, %v", st, err)
	}
	if st.GetImage().GetId() != ref {
		t.Errorf("after a restart nginx:1.27 is %s, was pulled as %s", st.GetImage().GetId(), ref)
	}
	if st, err := r.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "busybox:1.36"}, false); err != nil || st.GetImage() != nil {
		t.Errorf("an image never pulled is on the node after a restart: %v, %v", st, err)
	}
}

// What changes without a CRI call (a container that exits by itself) and
// what the runtime alone holds (a resize) is saved at the next Save, and
// so survives a restart; a Save with nothing changed writes nothing.
func TestSaveKeepsEveryChange(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	file := filepath.Join(dir, "node-1.json")
	cfg := Config{Node: "node-1", PodCIDR: "10.244.9.0/24", Seed: 1, Speed: func() float64 { return cri.MaxSpeed },
		StateFile: file, Dir: dir}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	image := &runtimeapi.ImageSpec{Image: "nginx:1.27"}
	if _, err := r.PullImage(ctx, image, nil, nil); err != nil {
		t.Fatal(err)
	}
	sb := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "u1"}, LogDirectory: dir}
	sandbox, err := r.RunPodSandbox(ctx, sb, "")
	if err != nil {
		t.Fatal(err)
	}
	id, err := r.CreateContainer(ctx, sandbox, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "web"},
		Image: image, LogPath: "web/0.log", Annotations: map[string]string{model.AnnotationExitAfter: "100ms", model.AnnotationExitCode: "3"}}, sb)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	save := func() {
		t.Helper()
		if err := r.Save(ctx); err != nil {
			t.Fatal(err)
		}
	}
	save()
	waittest.EventuallyEvery(t, "the container to exit by itself", 10*time.Millisecond, 10*time.Second, func() (bool, string) {
		st, err := r.ContainerStatus(ctx, id, false)
		if err != nil {
			t.Fatal(err)
		}
		return st.GetStatus().GetState() == runtimeapi.ContainerState_CONTAINER_EXITED, st.GetStatus().GetState().String()
	})
	save()
	if s := savedContainer(t, file, id); s.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED || s.GetExitCode() != 3 {
		t.Errorf("saved after its exit, the container is %s with exit code %d, want exited with 3", s.GetState(), s.GetExitCode())
	}
	resized := &runtimeapi.LinuxContainerResources{CpuPeriod: 100000, CpuQuota: 30000, CpuShares: 153, MemoryLimitInBytes: 256 << 20}
	if err := r.UpdateContainerResources(ctx, id, &runtimeapi.ContainerResources{Linux: resized}); err != nil {
		t.Fatal(err)
	}
	save()
	if got := savedContainer(t, file, id).GetResources().GetLinux(); !proto.Equal(got, resized) {
		t.Errorf("saved after a resize, the container has %v, want %v", got, resized)
	}

	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	save()
	if _, err := os.Stat(file); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a Save with nothing changed wrote the state again (%v)", err)
	}
	r.saved = nil // as if not saved yet: Shutdown writes it
	if err := r.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	r, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Shutdown(ctx) //nolint:errcheck
	st, err := r.ContainerStatus(ctx, id, false)
	if err != nil {
		t.Fatalf("after a restart: %v", err)
	}
	if s := st.GetStatus(); s.GetExitCode() != 3 || s.GetReason() != "Error" {
		t.Errorf("after a restart the container exited %d (%s), want 3 (Error): its own exit was not saved", s.GetExitCode(), s.GetReason())
	}
	if got := st.GetStatus().GetResources().GetLinux(); !proto.Equal(got, resized) {
		t.Errorf("after a restart the container reports %v, want the resize %v", got, resized)
	}
}

// savedContainer returns container id's record in the state file.
func savedContainer(t *testing.T, file, id string) *runtimeapi.ContainerStatus {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var st state
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	for _, c := range st.Containers {
		if c.GetId() == id {
			return c
		}
	}
	t.Fatalf("container %s is not in the saved state", id)
	return nil
}

// A state file as earlier versions wrote it loads: its images are on the
// node with their IDs and repo digests, its container is exited with the
// exit it had, in its sandbox, and its sandbox is not ready.
func TestStateFileLoads(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	file := filepath.Join(dir, "node-1.json")
	const saved = `{"sandboxes":[{"id":"sb1","config":{"metadata":{"name":"web","uid":"u1","namespace":"default"}},"created":"2026-11-28T10:00:00Z","ip":"127.244.9.2"}],` +
		`"containers":[{"id":"c1","metadata":{"name":"web"},"state":2,"created_at":1,"started_at":2,"finished_at":3,"exit_code":3,` +
		`"image":{"image":"nginx:1.27"},"image_ref":"nginx:1.27","reason":"Error","annotations":{"podtrace.dev/sandbox-id":"sb1"},"log_path":"web/0.log"}],` +
		`"images":[{"Ref":"docker.io/library/nginx:1.27","ID":"sha256:0899","RepoDigest":"docker.io/library/nginx@sha256:5301","Size":72955450}]}`
	if err := os.WriteFile(file, []byte(saved), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := New(Config{Node: "node-1", PodCIDR: "10.244.9.0/24", StateFile: file, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Shutdown(ctx) //nolint:errcheck
	img, err := r.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "nginx:1.27"}, false)
	want := &runtimeapi.Image{Id: "sha256:0899", RepoTags: []string{"docker.io/library/nginx:1.27"},
		RepoDigests: []string{"docker.io/library/nginx@sha256:5301"}, Size: 72955450}
	if err != nil || !proto.Equal(img.GetImage(), want) {
		t.Errorf("the saved image is %v (%v), want %v", img.GetImage(), err, want)
	}
	cs, err := r.ListContainers(ctx, &runtimeapi.ContainerFilter{PodSandboxId: "sb1"})
	if err != nil || len(cs) != 1 || cs[0].GetState() != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Fatalf("the saved sandbox's containers: %v (%v), want c1 exited", cs, err)
	}
	st, err := r.ContainerStatus(ctx, "c1", false)
	if s := st.GetStatus(); err != nil || s.GetExitCode() != 3 || s.GetReason() != "Error" || s.GetFinishedAt() != 3 || s.GetAnnotations()[sandboxAnnotation] != "" {
		t.Errorf("the saved container: %v (%v), want exit 3 (Error) at 3, no sandbox annotation", s, err)
	}
	sbs, err := r.ListPodSandbox(ctx, nil)
	if err != nil || len(sbs) != 1 || sbs[0].GetState() != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
		t.Errorf("the saved sandbox: %v (%v), want sb1 not ready", sbs, err)
	}
}
