package containerd

import (
	"context"
	"fmt"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

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
	info, ok, err := r.unpackedInfo(ctx, img)
	if err != nil || !ok {
		return nil, err
	}
	return &info.img, nil
}

// imageInfo is what the runtime needs of an unpacked image; it is cached
// by reference and manifest digest (content under a digest never changes).
type imageInfo struct {
	img  runtime.Image
	spec ocispec.Image
}

// unpackedInfo returns img's description if it is unpacked (ok false if not).
func (r *Runtime) unpackedInfo(ctx context.Context, img client.Image) (imageInfo, bool, error) {
	key := img.Name() + "@" + img.Target().Digest.String()
	r.mu.Lock()
	info, ok := r.imageCache[key]
	r.mu.Unlock()
	if ok {
		return info, true, nil
	}
	if unpacked, err := img.IsUnpacked(ctx, r.cfg.Snapshotter); err != nil || !unpacked {
		return imageInfo{}, false, err
	}
	desc, err := r.describe(ctx, img)
	if err != nil {
		return imageInfo{}, false, err
	}
	spec, err := img.Spec(ctx)
	if err != nil {
		return imageInfo{}, false, fmt.Errorf("image %s config: %w", img.Name(), err)
	}
	info = imageInfo{img: desc, spec: spec}
	r.mu.Lock()
	r.imageCache[key] = info
	r.mu.Unlock()
	return info, true, nil
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
func (r *Runtime) image(ctx context.Context, ref string) (client.Image, imageInfo, error) {
	img, err := r.c.GetImage(ctx, ref)
	if err != nil {
		return nil, imageInfo{}, fmt.Errorf("failed to get image %q: %w", ref, err)
	}
	info, ok, err := r.unpackedInfo(ctx, img)
	if err == nil && !ok {
		err = fmt.Errorf("image %q is not unpacked", ref)
	}
	if err != nil {
		return nil, imageInfo{}, fmt.Errorf("failed to get image %q: %w", ref, err)
	}
	return img, info, nil
}
