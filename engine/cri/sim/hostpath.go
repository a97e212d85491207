package sim

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// makeMountSource creates a bind mount's missing source as a directory,
// as containerd's CRI plugin does (its WithMounts: os.MkdirAll(src, 0755)
// when src does not exist), so that a container writing under a hostPath
// volume of no type that is not there yet succeeds as on containerd.
//
// It creates only under Config.HostDir, the node's host file system under
// podtrace's data dir, where the kubelet puts every hostPath; any other
// path (or no HostDir) is left alone. It creates through an os.Root opened
// at HostDir, which refuses a ".." or a symbolic link that would lead out
// of it, so nothing outside HostDir is ever made.
func (r *Runtime) makeMountSource(src string) error {
	rel, ok := under(r.cfg.HostDir, src)
	if !ok {
		return nil
	}
	if _, err := os.Lstat(src); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	root, err := os.OpenRoot(r.cfg.HostDir)
	if err != nil {
		return fmt.Errorf("failed to mkdir %q: %w", src, err)
	}
	defer root.Close()
	if err := root.MkdirAll(rel, 0o755); err != nil {
		return fmt.Errorf("failed to mkdir %q: %w", src, err)
	}
	return nil
}

// under returns p relative to dir when p is dir or below it, lexically.
func under(dir, p string) (string, bool) {
	if dir == "" || !filepath.IsAbs(p) {
		return "", false
	}
	rel, err := filepath.Rel(filepath.Clean(dir), filepath.Clean(p))
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return rel, true
}
