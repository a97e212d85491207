package kubelet

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/engine/kubelet/network"
	"github.com/podtrace/podtrace/engine/kubelet/runtime"
)

// Runtimes and network plugins that are real (containerd, CNI) can make a
// fault happen for real instead of the kubelet wording it: a pull of a tag
// that does not exist, an exec hook that exits 1, an ADD that finds no IPs.
// They can also reach the pod's network for HTTP probes. Each is optional.

// pullFaulter pulls something that fails the way the variant says.
type pullFaulter interface {
	PullFault(ctx context.Context, image, variant string) error
}

// hookFaulter runs a postStart hook in the container that exits 1.
type hookFaulter interface {
	HookFault(ctx context.Context, containerID string) ([]string, runtime.ExecResult, error)
}

// setUpFaulter runs a CNI ADD that fails the way the variant says.
type setUpFaulter interface {
	SetUpFault(ctx context.Context, pod network.Pod, variant string) error
}

// httpGetter sends an HTTP GET from inside the pod's network namespace.
type httpGetter interface {
	HTTPGet(ctx context.Context, sandboxID, url string, timeout time.Duration) (int, error)
}

// realHookFault runs the failing hook for real when the runtime can, and
// words its failure as the kubelet does; ok is false when it cannot.
func (w *podWorker) realHookFault(ctx context.Context, pod *v1.Pod, c *ctr) (string, bool) {
	hf, ok := w.k.rt.(hookFaulter)
	if !ok {
		return "", false
	}
	cmd, res, err := hf.HookFault(ctx, c.id)
	if err != nil {
		return fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q",
			cmd, c.spec.Name, formatPod(pod), err, ""), true
	}
	return fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: command '%s' exited with %d: %s, message: %q",
		cmd, c.spec.Name, formatPod(pod), strings.Join(cmd, " "), res.ExitCode, res.Stderr, res.Stdout), true
}

// realHTTPGet probes url from inside the pod's network when the runtime can;
// ok is false when it cannot.
func (w *podWorker) realHTTPGet(ctx context.Context, url string, timeout time.Duration) (error, bool) {
	hg, ok := w.k.rt.(httpGetter)
	if !ok {
		return nil, false
	}
	code, err := hg.HTTPGet(ctx, w.s.sandboxID, url, timeout)
	if err != nil {
		return err, true
	}
	if code < 200 || code >= 400 {
		return fmt.Errorf("HTTP probe failed with statuscode: %d", code), true
	}
	return nil, true
}
