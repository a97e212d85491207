package cri

import (
	"context"
	"fmt"

	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubeletevents "k8s.io/kubernetes/pkg/kubelet/events"

	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

// imageHook is the ImageManagerService the kubelet sees.
type imageHook struct {
	internalapi.ImageManagerService
	h *Hooks
}

// PullImage is the pull stage. The kubelet pulls only images that are not
// on the node (imagePullPolicy IfNotPresent); an image already present is
// reported from the kubelet's Pulled event instead.
func (i *imageHook) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sc *runtimeapi.PodSandboxConfig) (string, error) {
	var ref string
	name := image.GetImage()
	i.h.markPulled(sc.GetMetadata().GetUid(), name)
	err := i.h.call(ctx, i.h.ref(sc.GetMetadata()), stages.Pull, func(e *stages.Event) { e.Message = name },
		func(f stages.Fault) error { return pullError(f, name) },
		func() (err error) { ref, err = i.ImageManagerService.PullImage(ctx, image, auth, sc); return err },
		func() (string, string) {
			return kubeletevents.PulledImage, fmt.Sprintf("Successfully pulled image %q", name)
		}, "ErrImagePull")
	return ref, err
}

// ImageStatus answers as the runtime does, except that while a pull fault
// could apply to a pod on this node, no image is present: the kubelet then
// pulls (as with imagePullPolicy Always) and the fault meets the pull, where
// otherwise a cached image would skip it.
func (i *imageHook) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error) {
	for _, f := range i.h.tr.ActiveFaults() {
		if f.Stage == stages.Pull && (f.Scope.Node == "" || f.Scope.Node == i.h.node) {
			return &runtimeapi.ImageStatusResponse{}, nil
		}
	}
	return i.ImageManagerService.ImageStatus(ctx, image, verbose)
}

// markPulled notes that the pod asked for image, so that its containers'
// create stage does not report the image as already present.
func (h *Hooks) markPulled(uid, image string) {
	h.mu.Lock()
	h.pulled[uid+"\x00"+normalize(image)] = true
	h.mu.Unlock()
}

// presentImage reports the pull stage of a container whose image the
// kubelet found on the node (imagePullPolicy IfNotPresent) and did not pull
// for this pod, as the kubelet's Pulled event words it.
func (h *Hooks) presentImage(ref trace.Ref, container, image string) {
	key := ref.UID + "\x00" + normalize(image)
	h.mu.Lock()
	pulled := h.pulled[key]
	h.pulled[key] = true
	h.mu.Unlock()
	if pulled || image == "" {
		return
	}
	now := h.tr.Clock().Now()
	h.tr.Record(ref, stages.Pull, Component, now, now, stages.Succeeded, kubeletevents.PulledImage,
		fmt.Sprintf("Container image %q already present on machine", image), func(e *stages.Event) { e.Container = container })
}
