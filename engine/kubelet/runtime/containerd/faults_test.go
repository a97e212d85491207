package containerd

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/podtrace/podtrace/engine/kubelet/network"
	"github.com/podtrace/podtrace/engine/kubelet/runtime"
	"github.com/podtrace/podtrace/images"
)

func TestPullFaultIsARealFailedPull(t *testing.T) {
	h := sharedHost(t)
	rt, _, err := h.Node(uniqueNode("fault-pull"), "10.244.51.0/24")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ variant, want string }{
		{"not-found", `code = NotFound desc = failed to pull and unpack image "podtrace.dev/demo:1.0": failed to resolve reference "podtrace.dev/demo:1.0": podtrace.dev/demo:1.0: not found`},
		{"unauthorized", "401 Unauthorized"},
		{"unreachable", "connection refused"},
	} {
		err := rt.PullFault(context.Background(), images.Demo, tc.variant)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("PullFault(%s) = %v, want %q", tc.variant, err, tc.want)
		}
	}
	if img, _ := rt.ImageStatus(context.Background(), images.Demo); img != nil {
		t.Fatalf("a failed pull left the image: %+v", img)
	}
}

func TestHookFaultAndHTTPProbeInThePod(t *testing.T) {
	h := sharedHost(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rt, pl, err := h.Node(uniqueNode("fault-hook"), "10.244.52.0/24")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.PullImage(ctx, images.Demo, nil); err != nil {
		t.Fatal(err)
	}
	sb, err := rt.RunPodSandbox(ctx, runtime.SandboxConfig{Name: "hook", Namespace: "default", UID: "uid-h", Hostname: "hook"})
	if err != nil {
		t.Fatal(err)
	}
	pod := network.Pod{Namespace: "default", Name: "hook", SandboxID: sb}
	res, err := pl.SetUp(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	id, err := rt.CreateContainer(ctx, sb, runtime.ContainerConfig{Name: "demo", Image: images.Demo})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	cmd, ex, err := rt.HookFault(ctx, id)
	if err != nil || ex.ExitCode != 1 || !strings.Contains(ex.Stderr, "failed on purpose") || cmd[0] != "/demo" {
		t.Fatalf("HookFault: %v %+v %v", cmd, ex, err)
	}
	code := 0
	for i := 0; i < 50 && code != http.StatusOK; i++ {
		code, err = rt.HTTPGet(ctx, sb, "http://"+res.IP+":8080/healthz", time.Second)
		time.Sleep(50 * time.Millisecond)
	}
	if code != http.StatusOK {
		t.Fatalf("HTTP probe of %s: %d %v", res.IP, code, err)
	}
	if _, err := rt.HTTPGet(ctx, sb, "http://"+res.IP+":9999/", time.Second); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("probe of a closed port: %v", err)
	}
	if err := pl.TearDown(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := rt.RemovePodSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	assertClean(t, rt, pl)
}
