package node

import (
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
)

// maxSocketPath is what a unix socket's path may hold (sun_path is 108
// bytes on Linux and 104 on macOS), with room for what the kubelet adds
// under its root directory (pod-resources/<random>.sock and the like).
const maxSocketPath = 104 - len("/pod-resources/1234567890.sock")

// rootDir returns the kubelet's root directory for dir: dir itself, or, when
// dir is too long for the unix sockets the kubelet serves under it (the pod
// resources API), a short symbolic link to it in the temporary directory.
func rootDir(dir string) (string, error) {
	if len(dir) <= maxSocketPath {
		return dir, nil
	}
	h := fnv.New32a()
	h.Write([]byte(dir))
	link := filepath.Join(os.TempDir(), fmt.Sprintf("podtrace-kubelet-%08x", h.Sum32()))
	if target, err := os.Readlink(link); err == nil && target == dir {
		return link, nil
	}
	os.Remove(link)
	if err := os.Symlink(dir, link); err != nil {
		return "", fmt.Errorf("kubelet root dir %s is too long for its sockets and a short link failed: %w", dir, err)
	}
	return link, nil
}
