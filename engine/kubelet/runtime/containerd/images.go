package containerd

import (
	"context"
	"fmt"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"

	"github.com/podtrace/podtrace/engine/kubelet/runtime"
)

// PullImage pulls and unpacks image through containerd's resolver from the
// loopback registry.
func (r *Runtime) PullImage(ctx context.Context, image string, _ *runtime.AuthConfig) (runtime.Image, error) {
	ctx = r.ctx(ctx)
	img, err := r.c.Pull(ctx, image, client.WithPullUnpack, client.WithResolver(r.resolver),
		client.WithPullSnapshotter(r.cfg.Snapshotter))
	if err != nil {
		code := "Unknown"
		if errdefs.IsNotFound(err) {
			code = "NotFound"
		}
		return runtime.Image{}, fmt.Errorf("rpc error: code = %s desc = failed to pull and unpack image %q: %w", code, image, err)
	}
	return r.describe(ctx, img)
}

// ImageStatus returns the image when it is present and unpacked, nil when not.
func (r *Runtime) ImageStatus(ctx context.Context, image string) (*runtime.Image, error) {
	ctx = r.ctx(ctx)
	img, err := r.c.GetImage(ctx, image)
	if errdefs.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if ok, err := img.IsUnpacked(ctx, r.cfg.Snapshotter); err != nil || !ok {
		return nil, err
	}
	out, err := r.describe(ctx, img)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

func (r *Runtime) describe(ctx context.Context, img client.Image) (runtime.Image, error) {
	cfg, err := img.Config(ctx)
	if err != nil {
		return runtime.Image{}, fmt.Errorf("image %s config: %w", img.Name(), err)
	}
	size, err := img.Size(ctx)
	if err != nil {
		return runtime.Image{}, fmt.Errorf("image %s size: %w", img.Name(), err)
	}
	name := img.Name()
	if i := lastIndexTag(name); i > 0 {
		name = name[:i]
	}
	return runtime.Image{Ref: img.Name(), ID: cfg.Digest.String(), RepoDigest: name + "@" + img.Target().Digest.String(), Size: size}, nil
}

// lastIndexTag returns the index of the ":" starting the tag of ref, or -1.
func lastIndexTag(ref string) int {
	for i := len(ref) - 1; i >= 0; i-- {
		switch ref[i] {
		case ':':
			return i
		case '/':
			return -1
		}
	}
	return -1
}

// image returns the unpacked image for a container, pulling nothing.
func (r *Runtime) image(ctx context.Context, ref string) (client.Image, error) {
	img, err := r.c.GetImage(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("failed to get image %q: %w", ref, err)
	}
	return img, nil
}
