package engine_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/podtrace/podtrace/engine/enginetest"
)

// kubeletVolumes are TestKubeletPods' volume cases, on its node: create
// makes a pod in pods' namespace, get reads it back.
func kubeletVolumes(t *testing.T, pods typedcorev1.PodInterface, create func(*testing.T, *corev1.Pod), get func(string) *corev1.Pod) {
	ctx := context.Background()
	t.Run("subPathExpr", func(t *testing.T) {
		// The kubelet makes the expanded subpath inside the volume itself
		// (it reads the volume directory's mode first), as the conformance
		// suite's Variable Expansion specs check.
		create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "subpath", Annotations: map[string]string{"dir": "logs"}},
			Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36", Command: []string{"sh", "-c", "echo hi > /work/note; cat /all/logs/note; sleep 3600"},
					Env: []corev1.EnvVar{{Name: "DIR", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['dir']"}}}},
					VolumeMounts: []corev1.VolumeMount{{Name: "work", MountPath: "/work", SubPathExpr: "$(DIR)"},
						{Name: "work", MountPath: "/all"}}}}}})
		enginetest.WaitFor(t, 30*time.Second, "the pod Ready", func() bool { return isReady(get("subpath")) })
		// What the container writes in its subpath is in the volume's logs/.
		enginetest.WaitFor(t, 10*time.Second, "the note read back through the whole volume", func() bool {
			b, err := pods.GetLogs("subpath", &corev1.PodLogOptions{}).DoRaw(ctx)
			return err == nil && string(b) == "hi\n"
		})
	})

	t.Run("emptyDir medium Memory", func(t *testing.T) {
		// The kubelet mounts an emptyDir of medium Memory as tmpfs, and
		// agnhost mounttest (the EmptyDir conformance specs' program) reads
		// its type: tmpfs, where a disk emptyDir reads the disk's.
		mounttest := func(name string) corev1.Container {
			return corev1.Container{Name: name, Image: "registry.k8s.io/e2e-test-images/agnhost:2.63.0",
				Args: []string{"mounttest", "--fs_type=/test-volume"}, VolumeMounts: []corev1.VolumeMount{{Name: name, MountPath: "/test-volume"}}}
		}
		create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "tmpfs"}, Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Volumes: []corev1.Volume{{Name: "memory", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
				{Name: "disk", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			Containers: []corev1.Container{mounttest("memory"), mounttest("disk")}}})
		enginetest.WaitFor(t, 60*time.Second, "the pod Succeeded", func() bool { return get("tmpfs").Status.Phase == corev1.PodSucceeded })
		for _, c := range []struct {
			container string
			tmpfs     bool
		}{{"memory", true}, {"disk", tmpfsTemp(t)}} {
			b, err := pods.GetLogs("tmpfs", &corev1.PodLogOptions{Container: c.container}).DoRaw(ctx)
			if err != nil {
				t.Fatalf("kubectl logs tmpfs -c %s: %v", c.container, err)
			}
			if got := strings.Contains(string(b), `mount type of "/test-volume": tmpfs`); got != c.tmpfs || !strings.HasPrefix(string(b), `mount type of "/test-volume": `) {
				t.Errorf("kubectl logs tmpfs -c %s: %q; want tmpfs: %v", c.container, b, c.tmpfs)
			}
		}
	})

	t.Run("image volume", func(t *testing.T) {
		// The kubelet pulls an image volume's image and asks the runtime
		// to mount it (ImageVolume, GA): the pod runs.
		create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "imagevol"}, Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{
				Reference: "registry.k8s.io/e2e-test-images/kitten:1.8", PullPolicy: corev1.PullIfNotPresent}}}},
			Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36", Command: []string{"sleep", "3600"},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data", ReadOnly: true}}}}}})
		enginetest.WaitFor(t, 30*time.Second, "the pod Ready", func() bool { return isReady(get("imagevol")) })
	})
}

// tmpfsTemp reports whether the temporary directory, where the tests' data
// dirs are, is itself on tmpfs (a disk emptyDir there reads tmpfs too).
func tmpfsTemp(t *testing.T) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(os.TempDir(), &st); err != nil {
		t.Fatal(err)
	}
	return st.Type == 0x01021994 // TMPFS_MAGIC
}
