package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// An image volume (a CRI mount of an image, as the kubelet asks for it:
// by the image's ID and the reference the pod named) shows the image's
// files, as the ImageVolume spec reads kitten's.
func TestImageVolumeShowsTheImagesFiles(t *testing.T) {
	ctx := context.Background()
	// The kubelet's mount names the image by its ID and the pod's reference.
	kitten := &runtimeapi.ImageSpec{Image: "sha256:0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",
		UserSpecifiedImage: "registry.k8s.io/e2e-test-images/kitten:1.8"}
	r, id := runContainer(t, &runtimeapi.ContainerConfig{Image: &runtimeapi.ImageSpec{Image: "busybox:1.36"},
		Command: []string{"sleep", "3600"}, Mounts: []*runtimeapi.Mount{{ContainerPath: "/volume", Readonly: true, Image: kitten}}})
	for file, want := range map[string]string{"/volume/data.json": `"image": "kitten.jpg"`, "/volume/etc/os-release": "Alpine Linux"} {
		out, _, err := r.ExecSync(ctx, id, []string{"/bin/cat", file}, time.Minute)
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("cat %s: %q, %v; want %q", file, out, err, want)
		}
	}
}
