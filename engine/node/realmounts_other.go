//go:build !linux

package node

import (
	"errors"

	"k8s.io/mount-utils"

	"k8s.io/kubernetes/pkg/volume/util/hostutil"
	"k8s.io/kubernetes/pkg/volume/util/subpath"
)

// realMounts fails: real containers (and the kubelet's real mounts) need
// Linux.
func realMounts() (mount.Interface, subpath.Interface, hostutil.HostUtils, error) {
	return nil, nil, nil, errors.New("real containers need Linux: the kubelet's mounts are Linux's")
}

// unmountAll has nothing to undo: off Linux the kubelet mounts nothing.
func unmountAll(string) error { return nil }
