package sim

import (
	"context"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podtrace/podtrace/engine/cri/sim/model"
)

// PullImage pulls the image from the simulated registries (its size sets
// how long it takes; unknown registries and private images fail as a real
// pull does) and returns its ID.
func (r *Runtime) PullImage(ctx context.Context, spec *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, _ *runtimeapi.PodSandboxConfig) (string, error) {
	var a *model.AuthConfig
	if auth != nil {
		a = &model.AuthConfig{Username: auth.GetUsername(), Password: auth.GetPassword(), Auth: auth.GetAuth()}
	}
	img, err := r.rt.PullImage(ctx, spec.GetImage(), a)
	if err != nil {
		return "", criError(err)
	}
	return img.ID, nil
}

// ImageStatus returns the image, by name or ID, or a nil Image when it is
// not on the node.
func (r *Runtime) ImageStatus(ctx context.Context, spec *runtimeapi.ImageSpec, _ bool) (*runtimeapi.ImageStatusResponse, error) {
	for _, img := range r.images(ctx) {
		if img.ID == spec.GetImage() || img.Ref == model.Normalize(spec.GetImage()) {
			return &runtimeapi.ImageStatusResponse{Image: criImage(img)}, nil
		}
	}
	return &runtimeapi.ImageStatusResponse{}, nil
}

// ListImages lists the images on the node.
func (r *Runtime) ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	var out []*runtimeapi.Image
	want := filter.GetImage().GetImage()
	for _, img := range r.images(ctx) {
		if want == "" || img.ID == want || img.Ref == model.Normalize(want) {
			out = append(out, criImage(img))
		}
	}
	return out, nil
}

// RemoveImage removes an image from the node.
func (r *Runtime) RemoveImage(ctx context.Context, spec *runtimeapi.ImageSpec) error {
	for _, img := range r.images(ctx) {
		if img.ID == spec.GetImage() || img.Ref == model.Normalize(spec.GetImage()) {
			r.rt.RemoveImage(img.Ref)
		}
	}
	return nil
}

// ImageFsInfo reports the space the node's images take.
func (r *Runtime) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	var used, n uint64
	for _, img := range r.images(ctx) {
		used += uint64(img.Size)
		n++
	}
	fs := &runtimeapi.FilesystemUsage{Timestamp: time.Now().UnixNano(),
		FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: "/var/lib/" + RuntimeName}, UsedBytes: &runtimeapi.UInt64Value{Value: used},
		InodesUsed: &runtimeapi.UInt64Value{Value: n}}
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{fs}, ContainerFilesystems: []*runtimeapi.FilesystemUsage{fs}}, nil
}

func (r *Runtime) images(context.Context) []model.Image { return r.rt.Images() }

func criImage(img model.Image) *runtimeapi.Image {
	return &runtimeapi.Image{Id: img.ID, RepoTags: []string{img.Ref}, RepoDigests: []string{img.RepoDigest}, Size: uint64(img.Size)}
}

// ContainerStats reports no usage: simulated processes use no resources.
func (r *Runtime) ContainerStats(_ context.Context, id string) (*runtimeapi.ContainerStats, error) {
	return &runtimeapi.ContainerStats{Attributes: &runtimeapi.ContainerAttributes{Id: id}}, nil
}

// ListContainerStats reports no usage.
func (r *Runtime) ListContainerStats(context.Context, *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	return nil, nil
}

// PodSandboxStats reports no usage.
func (r *Runtime) PodSandboxStats(_ context.Context, id string) (*runtimeapi.PodSandboxStats, error) {
	return &runtimeapi.PodSandboxStats{Attributes: &runtimeapi.PodSandboxAttributes{Id: id}}, nil
}

// ListPodSandboxStats reports no usage.
func (r *Runtime) ListPodSandboxStats(context.Context, *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	return nil, nil
}

// ListMetricDescriptors lists no metrics.
func (r *Runtime) ListMetricDescriptors(context.Context) ([]*runtimeapi.MetricDescriptor, error) {
	return nil, nil
}

// ListPodSandboxMetrics lists no metrics.
func (r *Runtime) ListPodSandboxMetrics(context.Context) ([]*runtimeapi.PodSandboxMetrics, error) {
	return nil, nil
}
