package sim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/labels"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podtrace/podtrace/engine/cri"
	"github.com/podtrace/podtrace/engine/cri/sim/ipam"
)

// RunPodSandbox starts the pod's pause container, then sets up its network
// (the CNI ADD, through Config.Network) and starts answering on its
// address. A network failure tears the sandbox down again and fails the
// call as containerd does.
func (r *Runtime) RunPodSandbox(ctx context.Context, cfg *runtimeapi.PodSandboxConfig, _ string) (_ string, err error) {
	ctx, end := r.serverSpan(ctx, runtimeService, "RunPodSandbox")
	defer func() { end(err) }()
	if r.closed.Load() {
		return "", errShutDown
	}
	md := cfg.GetMetadata()
	key := fmt.Sprintf("%s/%s/%d", md.GetNamespace(), md.GetName(), md.GetAttempt())
	if err := r.timing.Take(ctx, r.timing.Sandbox, "sandbox/"+key); err != nil {
		return "", criError(err)
	}
	id := r.timing.ID(r.cfg.Node, "sandbox", key+"/"+md.GetUid())
	pod := ipam.Pod{Namespace: md.GetNamespace(), Name: md.GetName(), UID: md.GetUid(), SandboxID: id}
	add := func() (string, error) {
		res, err := r.ipam.SetUp(ctx, pod)
		if err != nil {
			return "", err
		}
		return r.address(res.IP), nil
	}
	var ip string
	if r.cfg.Network != nil {
		ip, err = r.cfg.Network(ctx, md, id, add)
	} else {
		ip, err = add()
	}
	if err != nil {
		r.undoSandbox(ctx, pod)
		return "", status.Error(codes.Unknown, cri.NetworkSetupError(id, err).Error())
	}
	if err := r.writeResolvConf(id, cfg.GetDnsConfig()); err != nil {
		r.undoSandbox(ctx, pod)
		return "", status.Error(codes.Unknown, fmt.Sprintf("failed to setup sandbox files: %v", err))
	}
	sb := &sandbox{id: id, config: cfg, created: time.Now(), ip: ip, ready: true}
	sb.serving = r.serve(sb)
	r.mu.Lock()
	r.sandboxes[id] = sb
	r.changes++
	r.mu.Unlock()
	return id, nil
}

// undoSandbox releases the address of a sandbox whose set-up failed
// and takes what stopping and removing its pause container take.
func (r *Runtime) undoSandbox(ctx context.Context, pod ipam.Pod) {
	ctx = context.WithoutCancel(ctx)
	_ = r.ipam.TearDown(ctx, pod)
	_ = r.timing.Take(ctx, r.timing.Stop, "stopsandbox/"+pod.SandboxID)
	_ = r.timing.Take(ctx, r.timing.Remove, "removesandbox/"+pod.SandboxID)
}

// StopPodSandbox kills the sandbox's containers that still run (exit
// 137), stops its pause container, stops answering on its address and
// releases it (CNI DEL).
func (r *Runtime) StopPodSandbox(ctx context.Context, id string) error {
	r.mu.Lock()
	sb, ok := r.sandboxes[id]
	var ids []string
	for cid, c := range r.containers {
		if c.sandbox == id {
			ids = append(ids, cid)
		}
	}
	r.mu.Unlock()
	if !ok {
		return nil // idempotent, as in CRI
	}
	for _, cid := range ids {
		if err := r.StopContainer(ctx, cid, 0); err != nil {
			return err
		}
	}
	if err := r.timing.Take(ctx, r.timing.Stop, "stopsandbox/"+id); err != nil {
		return criError(err)
	}
	r.mu.Lock()
	sb.ready = false
	srv := sb.serving
	sb.serving = nil
	r.mu.Unlock()
	srv.close()
	md := sb.config.GetMetadata()
	return criError(r.ipam.TearDown(ctx, ipam.Pod{Namespace: md.GetNamespace(), Name: md.GetName(), UID: md.GetUid(), SandboxID: id}))
}

// RemovePodSandbox removes a sandbox and its containers.
func (r *Runtime) RemovePodSandbox(ctx context.Context, id string) error {
	if err := r.StopPodSandbox(ctx, id); err != nil {
		return err
	}
	if err := r.timing.Take(ctx, r.timing.Remove, "removesandbox/"+id); err != nil {
		return criError(err)
	}
	if path := r.resolvPath(id); path != "" {
		_ = os.RemoveAll(filepath.Dir(path))
	}
	r.mu.Lock()
	delete(r.sandboxes, id)
	r.changes++
	for cid, c := range r.containers {
		if c.sandbox == id {
			c.release()
			delete(r.containers, cid)
		}
	}
	r.mu.Unlock()
	return nil
}

// PodSandboxStatus reports the sandbox's state and address.
func (r *Runtime) PodSandboxStatus(_ context.Context, id string, _ bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sb, ok := r.sandboxes[id]
	if !ok {
		return nil, notFound("sandbox", id)
	}
	return &runtimeapi.PodSandboxStatusResponse{Status: sb.status()}, nil
}

func (sb *sandbox) state() runtimeapi.PodSandboxState {
	if sb.ready {
		return runtimeapi.PodSandboxState_SANDBOX_READY
	}
	return runtimeapi.PodSandboxState_SANDBOX_NOTREADY
}

func (sb *sandbox) status() *runtimeapi.PodSandboxStatus {
	st := &runtimeapi.PodSandboxStatus{Id: sb.id, Metadata: sb.config.GetMetadata(), State: sb.state(),
		CreatedAt: sb.created.UnixNano(), Labels: sb.config.GetLabels(), Annotations: sb.config.GetAnnotations(),
		Network: &runtimeapi.PodSandboxNetworkStatus{Ip: sb.ip}}
	if l := sb.config.GetLinux(); l != nil {
		st.Linux = &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: l.GetSecurityContext().GetNamespaceOptions()}}
	}
	return st
}

// ListPodSandbox lists the sandboxes that match filter.
func (r *Runtime) ListPodSandbox(_ context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*runtimeapi.PodSandbox
	for _, sb := range r.sandboxes {
		if filter != nil {
			if filter.GetId() != "" && filter.GetId() != sb.id {
				continue
			}
			if s := filter.GetState(); s != nil && s.GetState() != sb.state() {
				continue
			}
			if !labels.SelectorFromSet(filter.GetLabelSelector()).Matches(labels.Set(sb.config.GetLabels())) {
				continue
			}
		}
		out = append(out, &runtimeapi.PodSandbox{Id: sb.id, Metadata: sb.config.GetMetadata(), State: sb.state(),
			CreatedAt: sb.created.UnixNano(), Labels: sb.config.GetLabels(), Annotations: sb.config.GetAnnotations()})
	}
	return out, nil
}

// UpdatePodSandboxResources accepts the new resources.
func (r *Runtime) UpdatePodSandboxResources(context.Context, *runtimeapi.UpdatePodSandboxResourcesRequest) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
	return &runtimeapi.UpdatePodSandboxResourcesResponse{}, nil
}
