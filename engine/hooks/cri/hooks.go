// Package cri is podtrace's seam between a real kubelet and its container
// runtime: a CRI interposer. Every CRI call the kubelet makes for a pod
// becomes a stage (sandbox: RunPodSandbox; pull: PullImage; create:
// CreateContainer; start: StartContainer; hooks: ExecSync of an exec
// postStart hook; terminate: StopContainer and exec preStop hooks; cleanup:
// StopPodSandbox), held at breakpoints and failed by faults as a CRI error,
// so what follows is the kubelet's own reaction in its own words
// (FailedCreatePodSandBox, ErrImagePull then ImagePullBackOff,
// FailedPostStartHook, CrashLoopBackOff). The kubelet stage comes from the
// kubelet's pod startup latency tracker (it first sees the pod) and its
// Events (FailedMount); the ready stage's end is the pod's Ready condition,
// which the API seam sees the kubelet write.
package cri

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

// Component is the component named in the events of the node stages.
const Component = "kubelet"

// RuntimeComponent names the container runtime in the cni stage's events.
const RuntimeComponent = "container runtime"

// Hooks interposes on one node's container runtime.
type Hooks struct {
	tr   *trace.Tracer
	node string

	mu           sync.Mutex
	sandboxes    map[string]trace.Ref // sandbox ID → pod
	containers   map[string]container // container ID → pod and container
	kubelet      map[string]*trace.Span
	pulled       map[string]bool            // pod UID and image → the pod pulled it
	ending       map[string]bool            // pod UID → deleted or finished
	ports        map[string][]int32         // pod UID → ExtraPorts
	postStart    map[string]map[string]bool // pod UID → containers that run hooks → has a postStart hook
	ready        map[string]bool            // pod UID → Ready as last reported (ReportReady)
	reportReady  bool
	starting     map[string]func(sandboxID string, err error) // pod UID → ends its sandbox stage
	startingUIDs map[string]string                            // namespace/name → UID, while RunPodSandbox runs
	networkDel   map[string]string                            // sandbox ID → what its CNI DEL did (NetworkDel)
	notReady     atomic.Bool
	stopped      atomic.Bool
}

type container struct {
	sandbox string
	name    string
	attempt int
	command []string
	preStop string // the exec preStop hook's command, as the kubelet annotates it
}

// New returns the interposer of node's runtime, reporting to tr and
// taking its faults and breakpoints. It is the node's runtime's
// cri.Observer; Interpose puts it in front of the runtime.
func New(tr *trace.Tracer, node string) *Hooks {
	return &Hooks{tr: tr, node: node, sandboxes: map[string]trace.Ref{},
		containers: map[string]container{}, kubelet: map[string]*trace.Span{}, pulled: map[string]bool{}, ending: map[string]bool{}, ports: map[string][]int32{},
		postStart: map[string]map[string]bool{}, ready: map[string]bool{},
		starting: map[string]func(string, error){}, startingUIDs: map[string]string{}, networkDel: map[string]string{}}
}

// Interpose returns the runtime and image services the kubelet should use
// in place of the node's runtime rt and image service img.
func (h *Hooks) Interpose(rt internalapi.RuntimeService, img internalapi.ImageManagerService) (internalapi.RuntimeService, internalapi.ImageManagerService) {
	return &runtimeHook{RuntimeService: rt, h: h}, &imageHook{ImageManagerService: img, h: h}
}

// Stop makes the runtime refuse new sandboxes and containers, as a
// node's runtime does while it shuts down: a kubelet loop that outlives
// its node then starts nothing.
func (h *Hooks) Stop() { h.stopped.Store(true) }

// errStopped is what a stopped runtime answers.
var errStopped = status.Error(codes.Unavailable, "the node is shutting down")

func (h *Hooks) ref(md *runtimeapi.PodSandboxMetadata) trace.Ref {
	return trace.Ref{Kind: stages.KindPod, Namespace: md.GetNamespace(), Name: md.GetName(), UID: md.GetUid(), Node: h.node}
}

func (h *Hooks) sandboxRef(id string) (trace.Ref, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r, ok := h.sandboxes[id]
	return r, ok
}

func (h *Hooks) containerRef(id string) (trace.Ref, container, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.containers[id]
	if !ok {
		return trace.Ref{}, c, false
	}
	r, ok := h.sandboxes[c.sandbox]
	return r, c, ok
}

// call runs one CRI call as a stage: it gates the stage (breakpoint,
// delay, hang), turns a fail or flake fault into fault(f) instead of the
// call, and reports the outcome: ok's words on success, failReason and the
// error (as words puts it, when set) on failure. edit sets the container
// and attempt.
func (h *Hooks) call(ctx context.Context, ref trace.Ref, stage stages.ID, edit func(*stages.Event),
	fault func(stages.Fault) error, do func() error, ok func() (reason, message string), failReason string,
	words ...func(error) string) error {
	describe := error.Error
	if len(words) > 0 {
		describe = words[0]
	}
	// The stage lasts from the kubelet's call: a delay fault's wait is part
	// of it, as a slow registry's is part of a pull.
	start := h.tr.Clock().Now()
	if f, err := h.tr.Gate(ctx, ref, stage, Component); err != nil {
		return err
	} else if f != nil {
		err := fault(*f)
		h.tr.BeginWithAt(ref, stage, Component, start, edit).Retry(failReason, describe(err), time.Time{})
		return err
	}
	span := h.tr.BeginWithAt(ref, stage, Component, start, edit)
	if err := do(); err != nil {
		span.Retry(failReason, describe(err), time.Time{})
		return err
	}
	reason, msg := ok()
	span.Succeed(reason, msg)
	return nil
}

func withContainer(name string, attempt int) func(*stages.Event) {
	return func(e *stages.Event) {
		e.Container = name
		e.Attempt = attempt
	}
}

func short(id string) string {
	if len(id) > 13 {
		return id[:13]
	}
	return id
}

// preStopCommand returns the exec preStop hook's command from the
// container annotation the kubelet writes (pkg/kubelet/kuberuntime/labels.go),
// joined as commandKey joins it; "" when there is none.
func preStopCommand(ann map[string]string) string {
	var hd v1.LifecycleHandler
	if err := json.Unmarshal([]byte(ann["io.kubernetes.container.preStopHandler"]), &hd); err != nil || hd.Exec == nil {
		return ""
	}
	return commandKey(hd.Exec.Command)
}

func commandKey(cmd []string) string { return strings.Join(cmd, "\x00") }
