package node

import (
	"os"
	"path/filepath"
	"sync"

	"k8s.io/mount-utils"
)

// Mounts is the mounter of a simulated node's kubelet: upstream's
// FakeMounter (kubemark's), which records what the kubelet mounts (the
// tmpfs of an emptyDir of medium Memory, and of the secret, configMap,
// downward API and projected volumes built on one) and mounts nothing.
// Type answers from that record, for the simulated runtime
// (cri.Config.Mounts). The kubelet's emptyDir plugin tells a tmpfs
// volume from statfs, which sees the host's disk, so it tears such a
// volume down without unmounting it: Mounts forgets a mount once its
// directory is gone. Safe for concurrent use.
type Mounts struct {
	*mount.FakeMounter

	mu   sync.Mutex
	kept int // how many mounts the record held after it last forgot some
}

// NewMounts returns an empty record.
func NewMounts() *Mounts { return &Mounts{FakeMounter: mount.NewFakeMounter(nil)} }

// Type returns the file system type of the deepest mount the kubelet
// made at or above path ("tmpfs"), or "" when it mounted nothing there.
func (m *Mounts) Type(path string) string {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p // the record holds targets with their links resolved
	}
	mps, _ := m.List()
	found, kind := "", ""
	for _, mp := range mps {
		if len(mp.Path) > len(found) && mount.PathWithinBase(path, mp.Path) {
			found, kind = mp.Path, mp.Type
		}
	}
	return kind
}

// Mount records a mount.
func (m *Mounts) Mount(source, target, fstype string, options []string) error {
	m.forgetGone()
	return m.FakeMounter.Mount(source, target, fstype, options)
}

// MountSensitive records a mount.
func (m *Mounts) MountSensitive(source, target, fstype string, options, sensitive []string) error {
	m.forgetGone()
	return m.FakeMounter.MountSensitive(source, target, fstype, options, sensitive)
}

// MountSensitiveWithoutSystemd records a mount (emptyDir's tmpfs).
func (m *Mounts) MountSensitiveWithoutSystemd(source, target, fstype string, options, sensitive []string) error {
	m.forgetGone()
	return m.FakeMounter.MountSensitiveWithoutSystemd(source, target, fstype, options, sensitive)
}

// MountSensitiveWithoutSystemdWithMountFlags records a mount.
func (m *Mounts) MountSensitiveWithoutSystemdWithMountFlags(source, target, fstype string, options, sensitive, flags []string) error {
	m.forgetGone()
	return m.FakeMounter.MountSensitiveWithoutSystemdWithMountFlags(source, target, fstype, options, sensitive, flags)
}

// forgetGone drops the FakeMounter's log of actions, which nothing reads
// (the kubelet's Unmount calls, where the data dir is on tmpfs, would
// grow it for as long as the node runs), and the mounts whose directory
// no longer exists (torn-down volumes) whenever the record has doubled
// since it last did: no more than a stat per mount made.
func (m *Mounts) forgetGone() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ResetLog()
	mps, _ := m.List()
	if len(mps) < 2*m.kept+16 {
		return
	}
	for _, mp := range mps {
		if _, err := os.Stat(mp.Path); os.IsNotExist(err) {
			_ = m.Unmount(mp.Path)
		}
	}
	m.ResetLog()
	mps, _ = m.List()
	m.kept = len(mps)
}
