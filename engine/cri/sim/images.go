package sim

import (
	"context"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podtrace/podtrace/engine/cri/sim/model"
)

// PullImage pulls the image from the simulated registries (its size sets
// how long it takes; unknown registries and private images fail as a real
// pull does), keeps it on the node and returns its ID.
func (r *Runtime) PullImage(ctx context.Context, spec *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, _ *runtimeapi.PodSandboxConfig) (_ string, err error) {
	ctx, end := r.serverSpan(ctx, imageService, "PullImage")
	defer func() { end(err) }()
	img, err := r.timing.Pull(ctx, r.cfg.Node, spec.GetImage(), auth)
	if err != nil {
		return "", criError(err)
	}
	r.mu.Lock()
	r.images[img.RepoTags[0]] = img
	r.changes++
	r.mu.Unlock()
	return img.Id, nil
}

// matching returns the node's images that spec names, by ID or by
// reference (all of them for an empty one, when all is set).
func (r *Runtime) matching(spec *runtimeapi.ImageSpec, all bool) []*runtimeapi.Image {
	want := spec.GetImage()
	ref := model.Normalize(want)
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*runtimeapi.Image
	for _, img := range r.images {
		if (all && want == "") || img.Id == want || img.RepoTags[0] == ref {
			out = append(out, proto.Clone(img).(*runtimeapi.Image))
		}
	}
	return out
}

// ImageStatus returns the image, by name or ID, or a nil Image when it is
// not on the node.
func (r *Runtime) ImageStatus(_ context.Context, spec *runtimeapi.ImageSpec, _ bool) (*runtimeapi.ImageStatusResponse, error) {
	if imgs := r.matching(spec, false); len(imgs) > 0 {
		return &runtimeapi.ImageStatusResponse{Image: imgs[0]}, nil
	}
	return &runtimeapi.ImageStatusResponse{}, nil
}

// ListImages lists the images on the node.
func (r *Runtime) ListImages(_ context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	return r.matching(filter.GetImage(), true), nil
}

// RemoveImage removes an image from the node.
func (r *Runtime) RemoveImage(_ context.Context, spec *runtimeapi.ImageSpec) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	ref := model.Normalize(spec.GetImage())
	for key, img := range r.images {
		if img.Id == spec.GetImage() || key == ref {
			delete(r.images, key)
			r.changes++
		}
	}
	return nil
}

// imageFs is where the runtime keeps its images and its containers'
// writable layers.
func imageFs() *runtimeapi.FilesystemIdentifier {
	return &runtimeapi.FilesystemIdentifier{Mountpoint: "/var/lib/" + RuntimeName}
}

// ImageFsInfo reports the space the node's images take.
func (r *Runtime) ImageFsInfo(context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	var used, n uint64
	r.mu.Lock()
	for _, img := range r.images {
		used += img.Size
		n++
	}
	r.mu.Unlock()
	fs := &runtimeapi.FilesystemUsage{Timestamp: time.Now().UnixNano(),
		FsId: imageFs(), UsedBytes: &runtimeapi.UInt64Value{Value: used},
		InodesUsed: &runtimeapi.UInt64Value{Value: n}}
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{fs}, ContainerFilesystems: []*runtimeapi.FilesystemUsage{fs}}, nil
}

// ContainerStats reports the container using nothing: simulated processes
// use no CPU, memory or disk.
func (r *Runtime) ContainerStats(ctx context.Context, id string) (*runtimeapi.ContainerStats, error) {
	cs, err := r.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{Id: id})
	if err != nil {
		return nil, err
	}
	if len(cs) == 0 {
		return nil, notFound("container", id)
	}
	return cs[0], nil
}

// ListContainerStats reports each container that matches filter using
// nothing, so that the kubelet's summary API (stats/summary) lists its
// pods, with no usage, as it would idle ones.
func (r *Runtime) ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	cs, err := r.ListContainers(ctx, &runtimeapi.ContainerFilter{Id: filter.GetId(),
		PodSandboxId: filter.GetPodSandboxId(), LabelSelector: filter.GetLabelSelector()})
	if err != nil {
		return nil, err
	}
	now := time.Now().UnixNano()
	zero := func() *runtimeapi.UInt64Value { return &runtimeapi.UInt64Value{} }
	out := make([]*runtimeapi.ContainerStats, len(cs))
	for i, c := range cs {
		out[i] = &runtimeapi.ContainerStats{
			Attributes: &runtimeapi.ContainerAttributes{Id: c.Id, Metadata: c.Metadata, Labels: c.Labels, Annotations: c.Annotations},
			Cpu:        &runtimeapi.CpuUsage{Timestamp: now, UsageCoreNanoSeconds: zero()},
			Memory: &runtimeapi.MemoryUsage{Timestamp: now, WorkingSetBytes: zero(), UsageBytes: zero(),
				RssBytes: zero(), PageFaults: zero(), MajorPageFaults: zero()},
			WritableLayer: &runtimeapi.FilesystemUsage{Timestamp: now, FsId: imageFs(), UsedBytes: zero(), InodesUsed: zero()},
		}
	}
	return out, nil
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
