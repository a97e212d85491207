package kubectle2e

import (
	"strings"
	"testing"
)

// TestAttach runs kubectl attach and kubectl run -i against the simulated
// runtime: the pod and the user's rights are checked as kube-apiserver
// does, then the real kubelet proxies the stream to the runtime's
// streaming server, whose answer is the CRI's Unimplemented (a simulated
// container's process reads no terminal), whether kubectl speaks websocket (falling
// back) or SPDY.
func TestAttach(t *testing.T) {
	eachKubectl(t, func(t *testing.T, c *cluster, k *kubectl, suffix string) {
		name := "attach-" + suffix
		k.ok("run", name, "--image=busybox", "--", "sleep", "infinity")
		k.ok("wait", "--for=condition=Ready", "pod/"+name, "--timeout=60s")
		unimplemented := "error attaching to container: rpc error: code = Unimplemented desc = podtrace-sim does not simulate attach: its processes read no terminal"
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"attach", name}, "If you don't see a command prompt, try pressing enter.\nerror: "},
			{[]string{"attach", name}, unimplemented},
			// kubectl run falls back to the pod's log and waits for the pod
			// to end, up to --pod-running-timeout.
			{[]string{"run", "-i", "--restart=Never", "--pod-running-timeout=15s", "--image=busybox", "run-" + name, "--", "sleep", "infinity"},
				"warning: couldn't attach to pod/run-" + name + ", falling back to streaming logs: "},
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
