package node

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/volume"
	volumetest "k8s.io/kubernetes/pkg/volume/testing"
	"k8s.io/kubernetes/pkg/volume/util/hostutil"

	"github.com/podtrace/podtrace/engine/cri/sim/proc"
)

// kubeletHost is upstream's fake kubelet volume host with the node's host
// utilities.
type kubeletHost struct {
	volume.KubeletVolumeHost
	volume.VolumeHost
}

func (kubeletHost) GetHostUtil() hostutil.HostUtils { return hostUtil{hostutil.NewFakeHostUtil(nil)} }

// hostPathVolume sets up, as a kubelet with host file system hostDir
// does, pod's hostPath volume of path and type, and returns its mounter.
func hostPathVolume(t *testing.T, hostDir, pod, path string, typ v1.HostPathType) (volume.Mounter, error) {
	t.Helper()
	fake := volumetest.NewFakeKubeletVolumeHost(t, t.TempDir(), nil, nil)
	var mgr volume.VolumePluginMgr
	if err := mgr.InitPlugins(hostPathPlugins(hostDir), nil, kubeletHost{fake, fake}); err != nil {
		t.Fatal(err)
	}
	vol := &v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: path, Type: &typ}}}
	spec := volume.NewSpecFromVolume(vol)
	p, err := mgr.FindPluginBySpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	m, err := p.NewMounter(spec, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod, UID: types.UID(pod)}})
	if err != nil {
		t.Fatal(err)
	}
	return m, m.SetUp(volume.MounterArgs{})
}

// container is a simulated container of a pod that mounts m at /data.
func container(m volume.Mounter) *proc.FS {
	return proc.NewFS([]proc.Mount{{ContainerPath: "/data", HostPath: m.GetPath()}}, false)
}

// The Job fixtures' pods: one writes /data/foo-0 on its hostPath /data
// (DirectoryOrCreate), the next on the same node reads it; a pod on
// another node does not see it, and the machine's own path is never made.
func TestHostPathIsTheNodesOwn(t *testing.T) {
	machinePath := filepath.Join(t.TempDir(), "job-e2e", "data") // what the pods name
	nodeA, nodeB := t.TempDir(), t.TempDir()
	mount := func(hostDir, pod string) *proc.FS {
		m, err := hostPathVolume(t, hostDir, pod, machinePath, v1.HostPathDirectoryOrCreate)
		if err != nil {
			t.Fatalf("SetUp of %s's volume: %v", pod, err)
		}
		return container(m)
	}
	writer, reader, other := mount(nodeA, "pod-0"), mount(nodeA, "pod-1"), mount(nodeB, "pod-2")
	f, err := writer.Open("/data/foo-0", os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatalf("touch /data/foo-0: %v", err)
	}
	_, _ = io.WriteString(f, "done")
	f.Close()
	r, err := reader.Open("/data/foo-0", os.O_RDONLY, 0)
	if err != nil {
		t.Fatalf("cat /data/foo-0 in a pod on the same node: %v", err)
	}
	if b, _ := io.ReadAll(r); string(b) != "done" {
		t.Errorf("cat /data/foo-0 on the same node = %q, want done", b)
	}
	if _, err := other.Stat("/data/foo-0"); !os.IsNotExist(err) {
		t.Errorf("stat /data/foo-0 on another node: %v, want no such file", err)
	}
	if _, err := os.Stat(filepath.Dir(machinePath)); !os.IsNotExist(err) {
		t.Errorf("the machine's %s: %v, want never made", filepath.Dir(machinePath), err)
	}
}

// The kubelet checks a hostPath's type on the node's host file system,
// and makes it for DirectoryOrCreate and FileOrCreate, as on a real node.
func TestHostPathTypes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		typ      v1.HostPathType
		existing string // "dir", "file", "parent" (its directory) or "" at /var/run/thing before set-up
		wantErr  string
		want     string // what /var/run/thing is after: "dir", "file" or ""
	}{
		{"unset, missing: left alone", v1.HostPathUnset, "", "", ""},
		{"DirectoryOrCreate makes a directory", v1.HostPathDirectoryOrCreate, "", "", "dir"},
		{"FileOrCreate makes a file", v1.HostPathFileOrCreate, "parent", "", "file"},
		{"FileOrCreate, no parent", v1.HostPathFileOrCreate, "", "open /var/run/thing: no such file or directory", ""},
		{"Directory, missing", v1.HostPathDirectory, "", "hostPath type check failed: /var/run/thing is not a directory", ""},
		{"Directory, a file", v1.HostPathDirectory, "file", "hostPath type check failed: /var/run/thing is not a directory", "file"},
		{"Directory, a directory", v1.HostPathDirectory, "dir", "", "dir"},
		{"File, a directory", v1.HostPathFile, "dir", "hostPath type check failed: /var/run/thing is not a file", "dir"},
		{"DirectoryOrCreate, a file", v1.HostPathDirectoryOrCreate, "file", "hostPath type check failed: /var/run/thing is not a directory", "file"},
		{"Socket, a file", v1.HostPathSocket, "file", "hostPath type check failed: /var/run/thing is not a socket file", "file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostDir := t.TempDir()
			onNode := filepath.Join(hostDir, "var", "run", "thing")
			switch tc.existing {
			case "dir":
				if err := os.MkdirAll(onNode, 0o755); err != nil {
					t.Fatal(err)
				}
			case "file", "parent":
				if err := os.MkdirAll(filepath.Dir(onNode), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if tc.existing == "file" {
				if err := os.WriteFile(onNode, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			m, err := hostPathVolume(t, hostDir, "pod", "/var/run/thing", tc.typ)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("SetUp: %v", err)
			case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
				t.Errorf("SetUp: %v, want %s", err, tc.wantErr)
			}
			if m.GetPath() != onNode {
				t.Errorf("the runtime's host path = %s, want %s", m.GetPath(), onNode)
			}
			if got := kind(onNode); got != tc.want {
				t.Errorf("/var/run/thing on the node is %q after SetUp, want %q", got, tc.want)
			}
		})
	}
}

// kind says what path is: "dir", "file", or "" when missing.
func kind(path string) string {
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return ""
	case st.IsDir():
		return "dir"
	}
	return "file"
}

// A node of real containers leaves hostPath volumes to the machine, as
// before: the runtime gets the pod's own path, and nothing is made.
func TestHostPathOfRealContainers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data")
	m, err := hostPathVolume(t, "", "pod", path, v1.HostPathDirectoryOrCreate)
	if err != nil {
		t.Fatal(err)
	}
	if m.GetPath() != path {
		t.Errorf("host path = %s, want the pod's %s", m.GetPath(), path)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("%s: %v, want not made", path, err)
	}
}

// No hostPath leaves the node's host file system.
func TestHostPathStaysOnTheNode(t *testing.T) {
	spec := volume.NewSpecFromVolume(&v1.Volume{Name: "x", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/../../etc"}}})
	got := onHost(spec, "/node").Volume.HostPath.Path
	if got != "/node/etc" {
		t.Errorf("onHost(/../../etc) = %s, want /node/etc", got)
	}
	if spec.Volume.HostPath.Path != "/../../etc" {
		t.Errorf("onHost changed the pod's volume to %s", spec.Volume.HostPath.Path)
	}
	if !strings.HasPrefix(onHost(volume.NewSpecFromPersistentVolume(&v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{
		PersistentVolumeSource: v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/mnt/pv"}}}}, false), "/node").PersistentVolume.Spec.HostPath.Path, "/node/mnt/pv") {
		t.Error("a hostPath persistent volume is not on the node")
	}
}

// A simulated node's host starts as a kind node's: a world-writable /tmp
// with the sticky bit, and the /etc/hosts its host-network pods see (the
// KubeletManagedEtcHosts spec mounts the hostPath /etc/hosts and compares).
func TestSeedHost(t *testing.T) {
	dir := t.TempDir()
	if err := seedHost(dir); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, "tmp"))
	if err != nil || st.Mode()&(os.ModeSticky|os.ModePerm) != os.ModeSticky|0o777 {
		t.Errorf("/tmp: %v %v, want drwxrwxrwt", st.Mode(), err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "etc", "hosts"))
	want, werr := os.ReadFile("/etc/hosts")
	if err != nil || len(got) == 0 || (werr == nil && string(got) != string(want)) {
		t.Errorf("/etc/hosts = %q, %v; want the machine's", got, err)
	}
	// What a pod wrote there stays across a restart.
	if err := os.WriteFile(filepath.Join(dir, "etc", "hosts"), []byte("10.0.0.1 mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := seedHost(dir); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "etc", "hosts")); string(got) != "10.0.0.1 mine\n" {
		t.Errorf("a restart replaced /etc/hosts: %q", got)
	}
	if err := seedHost(""); err != nil {
		t.Errorf("a node of real containers: %v", err)
	}
}

// Errors name the path as the pod named it, the host's root included.
func TestErrorsNameThePodsPath(t *testing.T) {
	for _, tc := range []struct{ msg, want string }{
		{"hostPath type check failed: /d/host/node-1/var/run/thing is not a directory", "hostPath type check failed: /var/run/thing is not a directory"},
		{"hostPath type check failed: /d/host/node-1 is not a file", "hostPath type check failed: / is not a file"},
	} {
		if got := asPodNamesIt(tc.msg, "/d/host/node-1"); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.msg, got, tc.want)
		}
	}
}
