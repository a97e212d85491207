package node

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/volume"
	"k8s.io/kubernetes/pkg/volume/hostpath"
)

// hostPathPlugins is upstream's hostPath volume plugin, set up without
// looking at the host: pods with hostPath volumes (a DaemonSet's log
// directory or runtime socket) start, and the machine podtrace runs on is
// neither checked nor changed for a node that is not it. The volume's type
// checks (Directory, File, Socket, ...) and its DirectoryOrCreate and
// FileOrCreate are skipped.
func hostPathPlugins() []volume.VolumePlugin {
	var out []volume.VolumePlugin
	for _, p := range hostpath.ProbeVolumePlugins(volume.VolumeConfig{}) {
		out = append(out, hostPathPlugin{p})
	}
	return out
}

// hostPathPlugin is the hostPath plugin whose mounters leave the host as
// it is.
type hostPathPlugin struct{ volume.VolumePlugin }

// NewMounter returns upstream's mounter, without its set-up.
func (p hostPathPlugin) NewMounter(spec *volume.Spec, pod *v1.Pod) (volume.Mounter, error) {
	m, err := p.VolumePlugin.NewMounter(spec, pod)
	if err != nil {
		return nil, err
	}
	return hostLeftAlone{m}, nil
}

// hostLeftAlone is a hostPath mounter that neither checks nor creates the
// path on the host.
type hostLeftAlone struct{ volume.Mounter }

// SetUp does nothing to the host.
func (hostLeftAlone) SetUp(volume.MounterArgs) error { return nil }

// SetUpAt does nothing to the host.
func (hostLeftAlone) SetUpAt(string, volume.MounterArgs) error { return nil }
