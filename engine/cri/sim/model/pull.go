package model

import (
	"context"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Pull resolves image against the simulated registries (see resolve) and,
// after the pull time for its size, returns it as node's image store keeps
// it: its ID, its normalized reference as its one tag, and name@digest as
// its repo digest (what a pod status reports as imageID). A failed
// resolution fails as containerd reports it, after the pull's fixed cost.
func (m Timing) Pull(ctx context.Context, node, image string, auth *runtimeapi.AuthConfig) (*runtimeapi.Image, error) {
	ref, err := parseReference(image)
	if err != nil {
		return nil, fmt.Errorf("rpc error: code = Unknown desc = failed to pull and unpack image %q: %w", image, err)
	}
	res := resolve(ref)
	if res.private && (auth.GetUsername() != "" || auth.GetAuth() != "") {
		res.private = false
	}
	if perr := pullError(ref, res); perr != nil {
		if err := m.Take(ctx, m.PullBase, "pullfail/"+ref.String()); err != nil {
			return nil, err
		}
		return nil, perr
	}
	if err := m.Sleep(ctx, m.pull(res.size, "pull/"+node+"/"+ref.String())); err != nil {
		return nil, err
	}
	digest := digestOf("manifest:" + ref.String())
	if ref.Digest != "" {
		digest = ref.Digest
	}
	return &runtimeapi.Image{Id: digestOf("config:" + ref.String()), RepoTags: []string{ref.String()},
		RepoDigests: []string{ref.Name() + "@" + digest}, Size: uint64(res.size)}, nil
}
