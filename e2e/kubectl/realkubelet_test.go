package kubectle2e

import (
	"strings"
	"testing"

	"github.com/podtrace/podtrace/engine"
)

// TestRealKubeletStreams runs kubectl exec, attach and port-forward through
// the real kubelet (--kubelet upstream) to a pod of the simulated runtime:
// the kubelet proxies each to the runtime's streaming server, as with
// containerd; exec and attach get the runtime's Unimplemented (a simulated
// container has no process), in kubectl's usual words, and a port forward
// reaches the pod's address, where the runtime answers for the pod.
func TestRealKubeletStreams(t *testing.T) {
	eachKubectlOn(t, engine.UpstreamKubelet, func(t *testing.T, c *cluster, k *kubectl, suffix string) {
		name := "streams-" + suffix
		k.ok("run", name, "--image=nginx", "--port=80")
		k.ok("wait", "--for=condition=Ready", "pod/"+name, "--timeout=60s")
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"exec", name, "--", "ls"},
				"error executing command in container: rpc error: code = Unimplemented desc = podtrace-sim runs no processes: exec is not simulated"},
			{[]string{"attach", name},
				"error attaching to container: rpc error: code = Unimplemented desc = podtrace-sim runs no processes: attach is not simulated"},
			{[]string{"--context", "podtrace-viewer", "exec", name, "--", "ls"},
				`pods "` + name + `" is forbidden: User "viewer" cannot create resource "pods/exec" in API group "" in the namespace "default"`},
		} {
			if got := k.fails(tc.args...); !strings.Contains(got, tc.want) {
				t.Errorf("kubectl %s:\n%s\nwant %q", strings.Join(tc.args, " "), got, tc.want)
			}
		}

		if _, b := k.getThroughForward(t, name); !strings.HasPrefix(string(b), "HTTP/1.0 200 OK") || !strings.HasSuffix(string(b), "ok\n") {
			t.Errorf("read %q through the forward, want the pod's 200 ok", b)
		}
	})
}
