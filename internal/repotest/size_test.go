package repotest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// maxTrackedSize is the largest file git may track without a reason.
const maxTrackedSize = 5 << 20

// largeFilesAllowed lists the tracked files allowed over maxTrackedSize,
// each with the reason. Build outputs (a binary at the root) never belong
// here: .gitignore keeps them out.
var largeFilesAllowed = map[string]string{}

// repoRoot returns the repository's top directory, or skips the test when
// git or the .git directory is not there (a source tarball).
func repoRoot(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git work tree: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// TestNoLargeTrackedFiles fails when git tracks a file over 5 MB that
// largeFilesAllowed does not list.
func TestNoLargeTrackedFiles(t *testing.T) {
	root := repoRoot(t)
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, name := range bytes.Split(bytes.TrimRight(out, "\x00"), []byte{0}) {
		path := string(name)
		fi, err := os.Lstat(filepath.Join(root, path))
		if err != nil || !fi.Mode().IsRegular() {
			continue // deleted in the work tree, or a symlink or submodule
		}
		if fi.Size() > maxTrackedSize {
			if _, ok := largeFilesAllowed[path]; !ok {
				t.Errorf("%s is %.1f MB, over the %d MB limit for tracked files: untrack it (git rm --cached) or list it with a reason in largeFilesAllowed",
					path, float64(fi.Size())/(1<<20), maxTrackedSize>>20)
			}
		}
	}
}
