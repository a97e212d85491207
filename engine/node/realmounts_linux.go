package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
	"k8s.io/mount-utils"

	"k8s.io/kubernetes/pkg/volume/util/hostutil"
	"k8s.io/kubernetes/pkg/volume/util/subpath"
)

// realMounts returns the kubelet's mounter, subPath handling and host
// utilities for real containers: upstream's own, as cmd/kubelet/app's
// UnsecuredDependencies builds them. The kubelet then really mounts
// (emptyDir's tmpfs, subPath bind mounts, its root directory made
// rshared), and Node.Unmount undoes what it leaves.
func realMounts() (mount.Interface, subpath.Interface, hostutil.HostUtils, error) {
	m := mount.New("")
	return m, subpath.New(m), hostutil.NewHostUtil(), nil
}

// unmountAll unmounts every mount at or under dir on this host, as
// /proc/self/mountinfo lists them: the deepest first, and of mounts
// stacked on one path the latest first. A mount that is busy is detached
// (lazily unmounted).
func unmountAll(dir string) error {
	dir, err := filepath.EvalSymlinks(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	infos, err := mount.ParseMountInfo("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	var under []string
	for i := len(infos) - 1; i >= 0; i-- {
		if mount.PathWithinBase(infos[i].MountPoint, dir) {
			under = append(under, infos[i].MountPoint)
		}
	}
	sort.SliceStable(under, func(i, j int) bool {
		return strings.Count(under[i], "/") > strings.Count(under[j], "/")
	})
	m := mount.New("")
	var errs []error
	for _, p := range under {
		if err := m.Unmount(p); err != nil {
			if derr := unix.Unmount(p, unix.MNT_DETACH); derr != nil && !errors.Is(derr, unix.EINVAL) {
				errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
			}
		}
	}
	return errors.Join(errs...)
}
