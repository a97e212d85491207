package node

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/volume"
	"k8s.io/kubernetes/pkg/volume/hostpath"
)

// hostPathPlugins is upstream's hostPath volume plugin, as a node whose
// host file system is hostDir sees it.
//
// The rule: a simulated node's host file system is a directory of its own
// under podtrace's data dir (Config.HostDir), as a kind node's is its
// container's. A pod's hostPath /data there is hostDir/data: upstream's
// plugin checks its type (Directory, File, Socket, ...) and makes it
// (DirectoryOrCreate, FileOrCreate) there, and the kubelet hands that
// directory to the runtime as the mount's host path, with a subPath below
// it. Pods on one node share its files; pods on another node do not see
// them; the machine's own /data is neither read nor made. The runtime
// needs no rule of its own: every host path the kubelet gives it is
// under podtrace's data dir.
//
// With hostDir empty (a node of real containers, whose runtime mounts the
// machine's own paths as kind's mounts its node's) the plugin is set up
// without looking at the host, as before: no type checks, nothing made.
func hostPathPlugins(hostDir string) []volume.VolumePlugin {
	var out []volume.VolumePlugin
	for _, p := range hostpath.ProbeVolumePlugins(volume.VolumeConfig{}) {
		out = append(out, hostPathPlugin{VolumePlugin: p, hostDir: hostDir})
	}
	return out
}

// hostPathPlugin is the hostPath plugin of a node whose host file system
// is hostDir (empty: the machine's, left alone).
type hostPathPlugin struct {
	volume.VolumePlugin
	hostDir string
}

// NewMounter returns upstream's mounter of spec's path on the node's host
// file system.
func (p hostPathPlugin) NewMounter(spec *volume.Spec, pod *v1.Pod) (volume.Mounter, error) {
	if p.hostDir == "" {
		m, err := p.VolumePlugin.NewMounter(spec, pod)
		if err != nil {
			return nil, err
		}
		return hostLeftAlone{m}, nil
	}
	m, err := p.VolumePlugin.NewMounter(onHost(spec, p.hostDir), pod)
	if err != nil {
		return nil, err
	}
	return nodeHostPath{Mounter: m, hostDir: p.hostDir}, nil
}

// onHost returns spec with its hostPath (a pod's volume or a persistent
// volume's) moved into hostDir: /data becomes hostDir/data, and no path
// leaves hostDir.
func onHost(spec *volume.Spec, hostDir string) *volume.Spec {
	out := *spec
	var src *v1.HostPathVolumeSource
	switch {
	case spec.Volume != nil && spec.Volume.HostPath != nil:
		out.Volume = spec.Volume.DeepCopy()
		src = out.Volume.HostPath
	case spec.PersistentVolume != nil && spec.PersistentVolume.Spec.HostPath != nil:
		out.PersistentVolume = spec.PersistentVolume.DeepCopy()
		src = out.PersistentVolume.Spec.HostPath
	default:
		return spec // upstream's NewMounter refuses it
	}
	src.Path = filepath.Join(hostDir, filepath.Clean("/"+src.Path))
	return &out
}

// nodeHostPath is upstream's hostPath mounter on a node's host file
// system.
type nodeHostPath struct {
	volume.Mounter
	hostDir string
}

// SetUp checks and makes the path as upstream's does, with the path in
// its errors as the pod names it ("/data is not a directory").
func (m nodeHostPath) SetUp(args volume.MounterArgs) error {
	if err := m.Mounter.SetUp(args); err != nil {
		return errors.New(asPodNamesIt(err.Error(), m.hostDir))
	}
	return nil
}

// asPodNamesIt puts the host path a pod named back in msg, for its
// mapped path under hostDir: hostDir/data is /data, hostDir itself "/".
func asPodNamesIt(msg, hostDir string) string {
	msg = strings.ReplaceAll(msg, hostDir+string(filepath.Separator), "/")
	return strings.ReplaceAll(msg, hostDir, "/")
}

// hostLeftAlone is a hostPath mounter that neither checks nor creates the
// path on the host.
type hostLeftAlone struct{ volume.Mounter }

// SetUp does nothing to the host.
func (hostLeftAlone) SetUp(volume.MounterArgs) error { return nil }

// SetUpAt does nothing to the host.
func (hostLeftAlone) SetUpAt(string, volume.MounterArgs) error { return nil }

// seedHost gives a simulated node's host file system, hostDir (nothing
// for "": the machine's), what a kind node's has before any pod: /tmp,
// writable by all with the sticky bit, and /etc/hosts, the one the
// kubelet gives the node's host-network pods (the machine's, which the
// kubelet mounts from its constant path), so that a pod mounting the
// hostPath /etc/hosts reads what they read. What is there already stays.
func seedHost(hostDir string) error {
	if hostDir == "" {
		return nil
	}
	tmp := filepath.Join(hostDir, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	if err := os.Chmod(tmp, os.ModeSticky|0o777); err != nil {
		return err
	}
	hosts := filepath.Join(hostDir, "etc", "hosts")
	if _, err := os.Stat(hosts); err == nil {
		return nil
	}
	b, err := os.ReadFile(etcHostsPath)
	if err != nil {
		b = []byte("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n") // no such file here (macOS has one)
	}
	if err := os.MkdirAll(filepath.Dir(hosts), 0o755); err != nil {
		return err
	}
	return os.WriteFile(hosts, b, 0o644)
}

// etcHostsPath is the file the kubelet mounts as a host-network pod's
// /etc/hosts (pkg/kubelet's etcHostsPath, a constant on Linux).
const etcHostsPath = "/etc/hosts"
