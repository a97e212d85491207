package node

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/mount-utils"

	"k8s.io/kubernetes/pkg/volume/util/hostutil"
	"k8s.io/kubernetes/pkg/volume/util/subpath"
)

// hostMounts returns the kubelet's mounter, subPath handling and host
// utilities: upstream's real ones for real containers (realMounts); else
// kubemark's fakes, with cfg.Mounts (or a record of the node's own) as
// the mounter.
func hostMounts(cfg Config) (mount.Interface, subpath.Interface, hostutil.HostUtils, error) {
	if cfg.RealContainers {
		return realMounts()
	}
	m := cfg.Mounts
	if m == nil {
		m = NewMounts()
	}
	return m, &subpather{}, hostUtil{hostutil.NewFakeHostUtil(nil)}, nil
}

// hostUtil is kubemark's fake host utilities, except that it reads the
// mode, type and existence of a path for real: the kubelet reads them to
// make a subPath directory inside a volume, which lives in the kubelet's
// real root directory (the fake's "not implemented" failed such
// containers, and its empty filesystem had the kubelet make a directory
// over a ConfigMap key's file), and the hostPath plugin to check a
// volume's type on the node's host file system.
type hostUtil struct{ *hostutil.FakeHostUtil }

// PathExists reports whether path exists (a symbolic link: its target),
// as upstream's host utilities do.
func (hostUtil) PathExists(path string) (bool, error) { return mount.PathExists(path) }

// GetFileType returns what path is (Directory, File, Socket, CharDevice,
// BlockDevice), as upstream's Linux host utilities do (its others say
// "unsupported"): the hostPath plugin checks a volume's type with it.
func (hostUtil) GetFileType(path string) (hostutil.FileType, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	switch m := st.Mode(); {
	case m.IsDir():
		return hostutil.FileTypeDirectory, nil
	case m.IsRegular():
		return hostutil.FileTypeFile, nil
	case m&os.ModeSocket != 0:
		return hostutil.FileTypeSocket, nil
	case m&os.ModeCharDevice != 0:
		return hostutil.FileTypeCharDev, nil
	case m&os.ModeDevice != 0:
		return hostutil.FileTypeBlockDev, nil
	}
	return "", fmt.Errorf("%s is of an unknown file type", path)
}

// GetMode returns the permissions of path.
func (hostUtil) GetMode(path string) (os.FileMode, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Mode(), nil
}

// subpather is kubemark's fake subPath handling, except that it makes a
// subPath's directory inside its volume for real, as the kubelet asks
// before it starts the container: the simulated runtime's processes read
// and write there. It bind-mounts nothing; the runtime gets the
// directory's own path.
type subpather struct{ subpath.FakeSubpath }

// SafeMakeDir makes subdir, and its parents, inside base with perm.
func (*subpather) SafeMakeDir(subdir, base string, perm os.FileMode) error {
	dir := filepath.Join(base, subdir)
	if rel, err := filepath.Rel(base, dir); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("subpath %q is outside the volume %q", subdir, base)
	}
	return os.MkdirAll(dir, perm)
}
