package node

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
	"k8s.io/mount-utils"
)

// mountsUnder lists the mount points at or under dir in this process's
// mount namespace.
func mountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	infos, err := mount.ParseMountInfo("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mi := range infos {
		if mount.PathWithinBase(mi.MountPoint, dir) {
			out = append(out, mi.MountPoint)
		}
	}
	return out
}

// A real node's kubelet leaves its root directory bind-mounted on itself
// (MakeRShared), tmpfs emptyDirs and subPath bind mounts inside it:
// Unmount takes them all away, through the root's link, and the
// directory can then be removed.
func TestUnmountLeavesNoMount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // whatever a failure left
		for _, p := range mountsUnder(t, dir) {
			_ = unix.Unmount(p, unix.MNT_DETACH)
		}
	})
	link := filepath.Join(t.TempDir(), "kubelet")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	vol, src := filepath.Join(dir, "pods", "uid", "volumes", "mem"), filepath.Join(dir, "pods", "uid", "volumes", "disk")
	for _, d := range []string{vol, src} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	m := mount.New("")
	for _, step := range []struct {
		src, target, fstype string
		opts                []string
	}{
		{dir, dir, "", []string{"bind"}},
		{"tmpfs", vol, "tmpfs", []string{"size=1M"}},
		{src, filepath.Join(vol, "sub"), "", []string{"bind"}},
	} {
		if err := os.MkdirAll(step.target, 0o750); err != nil {
			t.Fatal(err)
		}
		if err := m.Mount(step.src, step.target, step.fstype, step.opts); err != nil {
			t.Fatal(err)
		}
	}
	if got := mountsUnder(t, dir); len(got) < 3 { // more where the temporary directory's mount is shared
		t.Fatalf("mounted %v, want 3 mounts", got)
	}
	n := &Node{Name: "node-1", dir: link, real: true}
	if err := n.Unmount(); err != nil {
		t.Fatal(err)
	}
	if got := mountsUnder(t, dir); len(got) != 0 {
		t.Errorf("mounts left after Unmount: %v", got)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Errorf("remove the root directory: %v", err)
	}
}
