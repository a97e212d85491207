package sim

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podtrace/podtrace/engine/cri"
)

// A missing bind-mount source is made as a directory, as containerd makes
// it, but only under the node's host dir: never outside it, whether named
// outright, through "..", or through a symbolic link.
func TestMakeMountSource(t *testing.T) {
	base := t.TempDir()
	host, outside := filepath.Join(base, "host"), filepath.Join(base, "outside")
	for _, d := range []string{host, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(host, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(host, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, hostDir, src, check string
		made, fails               bool
	}{
		{"missing, under the host dir", host, filepath.Join(host, "data", "x"), "", true, false},
		{"no host dir", "", filepath.Join(host, "none"), "", false, false},
		{"outside the host dir", host, filepath.Join(outside, "data"), "", false, false},
		{"out through ..", host, host + "/../outside/up", filepath.Join(outside, "up"), false, false},
		{"out through a symbolic link", host, filepath.Join(host, "link", "data"), filepath.Join(outside, "data"), false, true},
		{"an existing file stays", host, filepath.Join(host, "file"), "", false, false},
	} {
		r := &Runtime{cfg: Config{HostDir: tc.hostDir}}
		err := r.makeMountSource(tc.src)
		check := tc.check
		if check == "" {
			check = tc.src
		}
		info, statErr := os.Stat(check)
		if made := statErr == nil && info.IsDir(); made != tc.made || (err != nil) != tc.fails {
			t.Errorf("%s: %s made %v, error %v; want made %v, error %v", tc.name, check, made, err, tc.made, tc.fails)
		}
	}
}

// CreateContainer makes a hostPath's missing directory (a volume of no
// type) under the node's host dir, so that the container can write there.
func TestCreateContainerMakesHostPath(t *testing.T) {
	ctx := context.Background()
	host := t.TempDir()
	r, err := New(Config{Node: "node-1", PodCIDR: "10.244.9.0/24", Seed: 1, Speed: func() float64 { return cri.MaxSpeed }, HostDir: host})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Shutdown(ctx) }) //nolint:errcheck
	sb := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "u1"}, LogDirectory: t.TempDir()}
	sandbox, err := r.RunPodSandbox(ctx, sb, "")
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(host, "var", "data")
	cfg := &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "web"}, Image: &runtimeapi.ImageSpec{Image: "busybox:1.36"},
		Command: []string{"sleep", "3600"}, Mounts: []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: src}}}
	if _, err := r.CreateContainer(ctx, sandbox, cfg, sb); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(src); err != nil || !info.IsDir() {
		t.Errorf("hostPath %s after CreateContainer: %v, %v; want a directory", src, info, err)
	}
}
