package sim

import (
	"context"
	"path/filepath"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podtrace/podtrace/engine/cri/sim/model"
)

// A node keeps its pulled images across a restart, as containerd's content
// store does: the kubelet then finds the image present and does not pull
// again ("already present on machine"). An image never pulled stays absent.
func TestImagesSurviveARestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := Config{Node: "node-1", PodCIDR: "10.244.9.0/24", Seed: 1, Speed: func() float64 { return model.MaxSpeed },
		StateFile: filepath.Join(dir, "node-1.json"), Dir: dir}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := r.PullImage(ctx, &runtimeapi.ImageSpec{Image: "nginx:1.27"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	r, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Shutdown(ctx) //nolint:errcheck
	st, err := r.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "nginx:1.27"}, false)
	if err != nil || st.GetImage() == nil {
		t.Fatalf("after a restart nginx:1.27 is not on the node: %v, %v", st, err)
	}
	if st.GetImage().GetId() != ref {
		t.Errorf("after a restart nginx:1.27 is %s, was pulled as %s", st.GetImage().GetId(), ref)
	}
	if st, err := r.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "busybox:1.36"}, false); err != nil || st.GetImage() != nil {
		t.Errorf("an image never pulled is on the node after a restart: %v, %v", st, err)
	}
}
