package node

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A data dir too long for the kubelet's sockets gets a short link in the
// temporary directory while the node runs, and the link goes when it
// stops, unless it has been made to lead elsewhere meanwhile.
func TestRootDirLinkGoesWithTheNode(t *testing.T) {
	t.Parallel()
	short := t.TempDir()
	if root, unlink, err := rootDir(short); err != nil || root != short {
		t.Fatalf("rootDir(%s) = %s, %v; want the dir itself", short, root, err)
	} else {
		unlink()
	}
	long := filepath.Join(t.TempDir(), strings.Repeat("d", maxSocketPath))
	if err := os.MkdirAll(long, 0o750); err != nil {
		t.Fatal(err)
	}
	root, unlink, err := rootDir(long)
	if err != nil {
		t.Fatal(err)
	}
	if len(root) > maxSocketPath {
		t.Fatalf("root %s is longer than %d", root, maxSocketPath)
	}
	if target, err := os.Readlink(root); err != nil || target != long {
		t.Fatalf("%s leads to %q (%v), want %s", root, target, err, long)
	}
	unlink()
	if _, err := os.Lstat(root); !os.IsNotExist(err) {
		t.Errorf("%s is still there after the node stopped (%v)", root, err)
	}

	root, unlink, err = rootDir(long)
	if err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	if err := os.Remove(root); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, root); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(root) })
	unlink()
	if target, err := os.Readlink(root); err != nil || target != other {
		t.Errorf("unlink removed a link leading elsewhere: %q, %v", target, err)
	}
}
