package cri

import (
	"context"
	"errors"
	"fmt"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	crictrd "github.com/podtrace/podtrace/engine/cri/containerd"
	"github.com/podtrace/podtrace/engine/cri/containerd/cniwire"
	crisim "github.com/podtrace/podtrace/engine/cri/sim"
)

// PluginAdd makes a real runtime's CNI ADD, as podtrace-cni reports it,
// the pod's cni stage (see Network): held at breakpoints, failed by a cni
// fault with the words of the delegated IPAM plugin, and reported with
// the pod's address. Failures are worded as the containerd podtrace runs
// (Debian's 1.6) reports them.
func (h *Hooks) PluginAdd(ctx context.Context, req cniwire.Request, rangeSet string, run func() cniwire.Report) error {
	uid := req.UID
	if uid == "" { // containerd before 1.7 does not pass K8S_POD_UID
		h.mu.Lock()
		uid = h.startingUIDs[req.Namespace+"/"+req.Name]
		h.mu.Unlock()
	}
	md := &runtimeapi.PodSandboxMetadata{Namespace: req.Namespace, Name: req.Name, Uid: uid}
	_, err := h.Network(rangeSet, crictrd.PluginName, "", crisim.NetworkSetupError)(ctx, md, req.Sandbox, func() (string, error) {
		r := run()
		if r.Error != "" {
			return "", &pluginError{plugin: crictrd.PluginName, err: errors.New(r.Error)}
		}
		return r.IP, nil
	})
	// podtrace-cni fails with the delegate's words; containerd names it.
	var pe *pluginError
	if errors.As(err, &pe) {
		return pe.err
	}
	return err
}

// PluginDel notes what a real runtime's CNI DEL did, for the sandbox's
// cleanup stage.
func (h *Hooks) PluginDel(req cniwire.Request, r cniwire.Report) {
	msg := fmt.Sprintf("CNI DEL %s in %s", req.IfName, r.Duration.Round(100*time.Microsecond))
	if r.Error != "" {
		msg = "CNI DEL failed: " + r.Error
	}
	h.mu.Lock()
	h.networkDel[req.Sandbox] = msg
	h.mu.Unlock()
}
