package containerd_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/mount-utils"

	crictrd "github.com/podtrace/podtrace/engine/cri/containerd"
	"github.com/podtrace/podtrace/images"
)

const volumePods = `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  greeting: hello
---
apiVersion: v1
kind: Pod
metadata:
  name: tmpfs
  labels: {app: volumes}
spec:
  restartPolicy: Never
  volumes:
  - name: memory
    emptyDir: {medium: Memory}
  containers:
  - name: mounttest
    image: IMAGE
    args: [mounttest, --fs_type=/test-volume]
    volumeMounts: [{name: memory, mountPath: /test-volume}]
  - name: hold
    image: IMAGE
    args: [pause]
    volumeMounts: [{name: memory, mountPath: /test-volume}]
---
apiVersion: v1
kind: Pod
metadata:
  name: subpath
  labels: {app: volumes}
spec:
  restartPolicy: Never
  volumes:
  - name: cfg
    configMap: {name: settings}
  - name: work
    emptyDir: {}
  containers:
  - name: mounttest
    image: IMAGE
    args: [mounttest, --file_content=/etc/greeting, --new_file_0644=/work/note]
    volumeMounts:
    - {name: cfg, mountPath: /etc/greeting, subPath: greeting}
    - {name: work, mountPath: /work, subPath: dir}
`

// kubeletMounts lists the host's mounts whose path contains part.
func kubeletMounts(t *testing.T, part string) []mount.MountInfo {
	t.Helper()
	infos, err := mount.ParseMountInfo("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []mount.MountInfo
	for _, mi := range infos {
		if strings.Contains(mi.MountPoint, part) {
			out = append(out, mi)
		}
	}
	return out
}

// TestVolumesOnContainerd runs what the EmptyDir and Subpath conformance
// specs run, agnhost mounttest: an emptyDir of medium Memory is a tmpfs
// the kubelet mounted on the host (the container reads tmpfs), and a
// pod with subPath mounts of a ConfigMap file and of an emptyDir directory
// starts and reads and writes through them. Once the cluster stops (the
// tmpfs pod still running), nothing stays mounted under the kubelet's
// root directory.
func TestVolumesOnContainerd(t *testing.T) {
	var kubeletRoot string
	t.Cleanup(func() { // runs after the cluster's own cleanup
		if kubeletRoot == "" {
			return
		}
		if left := kubeletMounts(t, kubeletRoot); len(left) != 0 {
			t.Errorf("mounts left on the host after the cluster stopped: %v", left)
		}
	})
	c := startRealCluster(t, 1, func(h *crictrd.HostConfig) { h.E2EImages = true })
	f := filepath.Join(t.TempDir(), "volumes.yaml")
	if err := os.WriteFile(f, []byte(strings.ReplaceAll(volumePods, "IMAGE", images.Agnhost)), 0o644); err != nil {
		t.Fatal(err)
	}
	c.kubectl(t, "apply", "-f", f)
	pods := c.waitPods(t, "app=volumes", 3*time.Minute, "mounttest done in both pods", func(ps []corev1.Pod) bool {
		done := 0
		for _, p := range ps {
			for _, cs := range p.Status.ContainerStatuses {
				if cs.Name == "mounttest" && cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0 {
					done++
				}
			}
		}
		return len(ps) == 2 && done == 2
	})
	if got := c.kubectl(t, "logs", "tmpfs", "-c", "mounttest"); !strings.Contains(got, `mount type of "/test-volume": tmpfs`) {
		t.Errorf("kubectl logs tmpfs: %q, want the volume's mount type tmpfs", got)
	}
	want := "content of file \"/etc/greeting\": hello\ncontent of file \"/work/note\": mount-tester new file\n"
	if got := c.kubectl(t, "logs", "subpath"); !strings.Contains(got, "content of file \"/etc/greeting\": hello") ||
		!strings.Contains(got, "content of file \"/work/note\": mount-tester new file") {
		t.Errorf("kubectl logs subpath: %q, want %q", got, want)
	}
	// The tmpfs is the kubelet's, on the host, in the running pod's volume
	// directory.
	var uid string
	for _, p := range pods {
		if p.Name == "tmpfs" {
			uid = string(p.UID)
		}
	}
	vol := "/pods/" + uid + "/volumes/kubernetes.io~empty-dir/memory"
	mounted := kubeletMounts(t, vol)
	if len(mounted) != 1 || mounted[0].FsType != "tmpfs" {
		t.Fatalf("host mounts at %s: %v, want one tmpfs", vol, mounted)
	}
	kubeletRoot = mounted[0].MountPoint[:strings.Index(mounted[0].MountPoint, "/pods/")]
}
