package cri

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/podtrace/podtrace/engine/cri"
	crisim "github.com/podtrace/podtrace/engine/cri/sim"
	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/internal/waittest"
	"github.com/podtrace/podtrace/stages"
)

// events collects what a tracer emits.
type events struct {
	mu  sync.Mutex
	evs []stages.Event
}

func (e *events) Emit(ev stages.Event) { e.mu.Lock(); e.evs = append(e.evs, ev); e.mu.Unlock() }

// ended returns the last end (terminal, or retrying) of each stage of
// pod, and the order in which the stages first ended.
func (e *events) ended(pod string) (order []stages.ID, last map[stages.ID]stages.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	last = map[stages.ID]stages.Event{}
	for _, ev := range e.evs {
		if ev.Pod != pod || (!ev.Status.Terminal() && ev.Status != stages.Retrying) {
			continue
		}
		if _, seen := last[ev.Stage]; !seen {
			order = append(order, ev.Stage)
		}
		last[ev.Stage] = ev
	}
	return order, last
}

// services are what a test's kubelet drives: the interposer's, in front
// of a node's runtime.
type services struct {
	rt  internalapi.RuntimeService
	img internalapi.ImageManagerService
}

// node is one simulated node (engine/cri/sim's factory, as engine/nodeset
// starts it) behind the interposer, its observer, at 100 times the model's
// speed, with no kubelet: the test makes the kubelet's CRI calls.
func node(t *testing.T) (services, *trace.Tracer, *events) {
	t.Helper()
	out := &events{}
	tr := trace.New(clock.RealClock{}, out)
	h := New(tr, "node-1")
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	n, err := crisim.NewNode(ctx, cri.Config{Name: "node-1", PodCIDR: "10.244.1.0/24", Seed: 1,
		Speed: func() float64 { return 100 }, Dir: t.TempDir(), Observer: h})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close(context.Background()) })
	var s services
	s.rt, s.img = h.Interpose(n.Runtime, n.Images)
	return s, tr, out
}

func sandboxConfig(name string) *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: "uid-" + name},
		Hostname: name, LogDirectory: "/var/log/pods/default_" + name}
}

// startPod makes the kubelet's calls for a one-container pod: the sandbox,
// the pull, the create and the start. It stops at the first error.
func startPod(ctx context.Context, s services, name, image string) error {
	rt, img := s.rt, s.img
	sc := sandboxConfig(name)
	id, err := rt.RunPodSandbox(ctx, sc, "")
	if err != nil {
		return err
	}
	ref, err := img.PullImage(ctx, &runtimeapi.ImageSpec{Image: image}, nil, sc)
	if err != nil {
		return err
	}
	cc := &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
		Image: &runtimeapi.ImageSpec{Image: ref}, LogPath: "app/0.log"}
	cid, err := rt.CreateContainer(ctx, id, cc, sc)
	if err != nil {
		return err
	}
	return rt.StartContainer(ctx, cid)
}

// A pod's CRI calls are its node stages, in the kubelet's order, each
// ended once, with the runtime's own words.
func TestCallsAreStages(t *testing.T) {
	t.Parallel()
	h, _, out := node(t)
	if err := startPod(context.Background(), h, "web", "nginx:1.27"); err != nil {
		t.Fatal(err)
	}
	order, last := out.ended("web")
	want := []stages.ID{stages.Sandbox, stages.CNI, stages.Pull, stages.Create, stages.Start}
	if strings.Join(ids(order), " ") != strings.Join(ids(want), " ") {
		t.Fatalf("stages ended %v, want %v", order, want)
	}
	for _, id := range want {
		if ev := last[id]; ev.Status != stages.Succeeded || ev.Node != "node-1" || ev.Namespace != "default" {
			t.Errorf("%s ended %+v, want Succeeded on node-1 in default", id, ev)
		}
	}
	// The pod's address: in the node's range inside the pod network
	// namespace (engine/podnet), its loopback twin 127.244.1.x outside.
	if msg := last[stages.CNI].Message; !strings.HasPrefix(msg, "eth0 10.244.1.") && !strings.HasPrefix(msg, "eth0 127.244.1.") {
		t.Errorf("cni says %q, want the pod's address in the node's range", msg)
	}
}

// A pull fault fails PullImage with containerd's words and status code,
// and the pull stage retries with them: what the kubelet then reports as
// ErrImagePull is the runtime's error.
func TestPullFaultIsTheRuntimesError(t *testing.T) {
	t.Parallel()
	h, tr, out := node(t)
	tr.Faults.Add(stages.Fault{Stage: stages.Pull, Kind: stages.Fail, Variant: stages.VariantUnauthorized,
		Scope: stages.Scope{Pod: "default/private"}})
	err := startPod(context.Background(), h, "private", "registry.example/app:1")
	want := `failed to pull and unpack image "registry.example/app:1": failed to resolve reference "registry.example/app:1": pull access denied`
	if status.Code(err) != codes.Unknown || !strings.Contains(err.Error(), want) {
		t.Fatalf("PullImage: %v (code %s), want code Unknown and %q", err, status.Code(err), want)
	}
	_, last := out.ended("private")
	if ev := last[stages.Pull]; ev.Status != stages.Retrying || !strings.Contains(ev.Message, "pull access denied") {
		t.Errorf("pull stage ended %+v, want Retrying with the runtime's words", ev)
	}
	// Another pod on the node is out of the fault's scope.
	if err := startPod(context.Background(), h, "public", "nginx:1.27"); err != nil {
		t.Errorf("a pod out of the fault's scope: %v", err)
	}
}

// A breakpoint holds the pod's call before its stage until it is
// continued; the runtime is not called meanwhile.
func TestBreakpointHoldsTheCall(t *testing.T) {
	t.Parallel()
	h, tr, out := node(t)
	tr.Breaks.Set(stages.Breakpoint{Stage: stages.Create, Scope: stages.Scope{Pod: "default/held"}})
	done := make(chan error, 1)
	go func() { done <- startPod(context.Background(), h, "held", "nginx:1.27") }()
	waittest.EventuallyEvery(t, "the pod held before create", 10*time.Millisecond, 10*time.Second, func() (bool, string) {
		return len(tr.Breaks.Held()) > 0, ""
	})
	if h := tr.Breaks.Held(); h[0] != (stages.Held{Pod: "default/held", Stage: stages.Create}) {
		t.Fatalf("held %+v, want default/held before create", h)
	}
	select {
	case err := <-done:
		t.Fatalf("the calls returned (%v) while held", err)
	case <-time.After(200 * time.Millisecond):
	}
	if _, last := out.ended("held"); last[stages.Create].Status != "" {
		t.Fatalf("create ended while held: %+v", last[stages.Create])
	}
	tr.Breaks.Continue("default/held")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, last := out.ended("held"); last[stages.Start].Status != stages.Succeeded {
		t.Errorf("start after continuing: %+v", last[stages.Start])
	}
}

func ids(s []stages.ID) []string {
	out := make([]string, len(s))
	for i, id := range s {
		out[i] = string(id)
	}
	return out
}
