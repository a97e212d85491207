package kubectle2e

import (
	"strings"
	"testing"

	"github.com/podtrace/podtrace/engine"
)

// TestAttach runs kubectl attach and kubectl run -i against the simulated
// runtime: the pod and the user's rights are checked as kube-apiserver
// does, then the kubelet's answer is the CRI's Unimplemented (the simulated
// runtime runs no processes), whether kubectl speaks websocket (falling
// back) or SPDY.
func TestAttach(t *testing.T) {
	// podtrace's own kubelet (--runtime containerd, macOS); the real
	// kubelet's streams are TestRealKubeletStreams.
	eachKubectlOn(t, engine.HandWrittenKubelet, func(t *testing.T, c *cluster, k *kubectl, suffix string) {
		name := "attach-" + suffix
		k.ok("run", name, "--image=busybox", "--", "sleep", "infinity")
		k.ok("wait", "--for=condition=Ready", "pod/"+name, "--timeout=60s")
		unimplemented := "Internal error occurred: error attaching to container: rpc error: code = Unimplemented desc = method Attach not implemented"
		for _, tc := range []struct {
			args []string
			want string
		}{
			// kubectl 1.30+ speaks websocket v5 to kube-apiserver, which
			// translates to the kubelet's SPDY and may wrap the kubelet's
			// internal error once more ("Internal error occurred: Internal
			// error occurred: ..."): the checks take the kubelet's part.
			{[]string{"attach", name}, "If you don't see a command prompt, try pressing enter.\nerror: Internal error occurred: "},
			{[]string{"attach", name}, unimplemented},
			// kubectl run falls back to the pod's log and waits for the pod
			// to end, up to --pod-running-timeout.
			{[]string{"run", "-i", "--restart=Never", "--pod-running-timeout=15s", "--image=busybox", "run-" + name, "--", "sleep", "infinity"},
				"warning: couldn't attach to pod/run-" + name + ", falling back to streaming logs: Internal error occurred: "},
			{[]string{"attach", name, "-c", "nope"}, "error: cannot attach to the container: container nope not found in pod " + name},
			{[]string{"attach", "missing-" + suffix},
				`Error from server (NotFound): pods "missing-` + suffix + `" not found`},
			{[]string{"--context", "podtrace-viewer", "attach", name},
				`pods "` + name + `" is forbidden: User "viewer" cannot create resource "pods/attach" in API group "" in the namespace "default"`},
		} {
			got := k.fails(tc.args...)
			if tc.args[0] == "run" && k.version == "1.27" && strings.Contains(got, "error: timed out waiting for the condition") {
				// kubectl 1.27 sometimes ends run -i with its own
				// --pod-running-timeout instead of the fallback warning
				// (twice in CI under load; the cause is not found yet).
				continue
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("kubectl %s:\n%s\nwant %q", strings.Join(tc.args, " "), got, tc.want)
			}
		}
	})
}
