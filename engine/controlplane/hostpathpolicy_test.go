package controlplane_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// persistentVolume is a 1Gi volume from source with reclaim policy.
func persistentVolume(name string, policy corev1.PersistentVolumeReclaimPolicy, source corev1.PersistentVolumeSource) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeReclaimPolicy: policy,
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			PersistentVolumeSource:        source,
		},
	}
}

// A hostPath PersistentVolume that kube-controller-manager would delete
// from the machine running podtrace is refused with the reason, from the
// moment the control plane has started, on create and on an update to
// Delete. What the deleter leaves alone is accepted: Retain, a path
// outside /tmp, a volume an outside provisioner made (kind's local-path),
// and Delete on any other source (the ResourceQuota conformance spec's
// CSI volume).
func TestHostPathVolumeWithReclaimDeleteIsRefused(t *testing.T) {
	t.Parallel()
	c := admin(t)
	ctx := context.Background()
	dir := t.TempDir() // a real path under /tmp: the deleter's pattern
	hostPath := corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}}
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}

	_, err := c.CoreV1().PersistentVolumes().Create(ctx, persistentVolume("hostpath-delete", corev1.PersistentVolumeReclaimDelete, hostPath), dryRun)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "kube-controller-manager runs on the machine running podtrace") {
		t.Fatalf("hostPath volume with Delete: got %v, want Forbidden with the reason", err)
	}
	provisioned := persistentVolume("hostpath-in-tree", corev1.PersistentVolumeReclaimDelete, hostPath)
	provisioned.Annotations = map[string]string{"pv.kubernetes.io/provisioned-by": "kubernetes.io/host-path"}
	if _, err := c.CoreV1().PersistentVolumes().Create(ctx, provisioned, dryRun); !apierrors.IsForbidden(err) {
		t.Errorf("hostPath volume provisioned by kubernetes.io/host-path with Delete: got %v, want Forbidden", err)
	}

	if _, err := c.CoreV1().PersistentVolumes().Create(ctx, persistentVolume("hostpath-retain", corev1.PersistentVolumeReclaimRetain, hostPath),
		metav1.CreateOptions{}); err != nil {
		t.Fatalf("hostPath volume with Retain: %v", err)
	}
	t.Cleanup(func() {
		_ = c.CoreV1().PersistentVolumes().Delete(context.Background(), "hostpath-retain", metav1.DeleteOptions{})
	})
	_, err = c.CoreV1().PersistentVolumes().Patch(ctx, "hostpath-retain", types.MergePatchType,
		[]byte(`{"spec":{"persistentVolumeReclaimPolicy":"Delete"}}`), metav1.PatchOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("patching a hostPath volume to Delete: got %v, want Forbidden", err)
	}

	external := persistentVolume("local-path", corev1.PersistentVolumeReclaimDelete, hostPath)
	external.Annotations = map[string]string{"pv.kubernetes.io/provisioned-by": "rancher.io/local-path"}
	outside := corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data/volume"}}
	csi := corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "fake.csi.k8s.io", VolumeHandle: "volume-handle"}}
	for _, pv := range []*corev1.PersistentVolume{external,
		persistentVolume("outside-tmp", corev1.PersistentVolumeReclaimDelete, outside),
		persistentVolume("csi-delete", corev1.PersistentVolumeReclaimDelete, csi)} {
		if _, err := c.CoreV1().PersistentVolumes().Create(ctx, pv, dryRun); err != nil {
			t.Errorf("%s with Delete: %v", pv.Name, err)
		}
	}
}
