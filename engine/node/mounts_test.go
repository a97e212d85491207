package node

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// What a simulated node's runtime is told of the kubelet's mounts: the
// type of the deepest mount at or above a path, through links too, and
// nothing once a torn-down volume's directory is gone.
func TestMountsType(t *testing.T) {
	dir := t.TempDir()
	mem, sub, disk := filepath.Join(dir, "mem"), filepath.Join(dir, "mem", "bound"), filepath.Join(dir, "disk")
	for _, d := range []string{mem, sub, disk, filepath.Join(mem, "x")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(t.TempDir(), "root")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	m := NewMounts()
	// As emptyDir mounts a tmpfs, through the kubelet's linked root.
	if err := m.MountSensitiveWithoutSystemd("tmpfs", filepath.Join(link, "mem"), "tmpfs", []string{"size=1M"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := m.Mount(disk, sub, "", []string{"bind"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{mem, "tmpfs"},
		{filepath.Join(mem, "x"), "tmpfs"},
		{filepath.Join(link, "mem", "x"), "tmpfs"},
		{sub, ""},
		{disk, ""},
		{dir, ""},
		{dir + "mem", ""},
	} {
		if got := m.Type(tc.path); got != tc.want {
			t.Errorf("Type(%s) = %q, want %q", tc.path, got, tc.want)
		}
	}

	// The kubelet removes a torn-down tmpfs volume's directory without
	// unmounting it (statfs sees the disk): the record forgets it as more
	// mounts come.
	if err := os.RemoveAll(mem); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		d := filepath.Join(dir, fmt.Sprint("v", i))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := m.MountSensitiveWithoutSystemd("tmpfs", d, "tmpfs", nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	mps, _ := m.List()
	if len(mps) != 40 { // v0..v39: mem and the bind mount inside it are gone
		t.Errorf("the record holds %d mounts, want 40: %v", len(mps), mps)
	}
	for _, mp := range mps {
		if mp.Path == mem || mp.Path == sub {
			t.Errorf("the record still holds %s, removed", mp.Path)
		}
	}
	if got := m.Type(filepath.Join(dir, "v39")); got != "tmpfs" {
		t.Errorf("Type(v39) = %q, want tmpfs", got)
	}

	// Where the kubelet unmounts what it mounted (a data dir on tmpfs), the
	// record keeps no history of it.
	for range 100 {
		v := filepath.Join(dir, "v0")
		if err := m.MountSensitiveWithoutSystemd("tmpfs", v, "tmpfs", nil, nil); err != nil {
			t.Fatal(err)
		}
		if err := m.Unmount(v); err != nil {
			t.Fatal(err)
		}
	}
	if log := m.GetLog(); len(log) > 2 {
		t.Errorf("the record logged %d actions, want at most the last mount and unmount", len(log))
	}
}
