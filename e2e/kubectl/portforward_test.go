package kubectle2e

import (
	"strings"
	"testing"
	"time"

	"github.com/podtrace/podtrace/engine"
)

// TestPortForward runs kubectl port-forward against the simulated runtime:
// the pod and the user's rights are checked as kube-apiserver does, the
// forward opens (kubectl 1.33 falling back from websocket to SPDY), and a
// connection through it gets the CRI's Unimplemented in its error stream
// (the simulated runtime has no pod network).
func TestPortForward(t *testing.T) {
	// podtrace's own kubelet (--runtime containerd, macOS); the real
	// kubelet's streams are TestRealKubeletStreams.
	eachKubectlOn(t, engine.HandWrittenKubelet, func(t *testing.T, c *cluster, k *kubectl, suffix string) {
		name := "pf-" + suffix
		k.ok("run", name, "--image=nginx", "--port=80")
		k.ok("wait", "--for=condition=Ready", "pod/"+name, "--timeout=60s")
		uid := k.ok("get", "pod", name, "-o", "jsonpath={.metadata.uid}")
		s, b := k.getThroughForward(t, name)
		if len(b) != 0 {
			t.Errorf("read %q through the forward, want nothing", b)
		}
		// The kubelet names the pod by its full name, name_namespace.
		want := "error forwarding port 80 to pod " + name + "_default, uid " + uid +
			": rpc error: code = Unimplemented desc = method PortForward not implemented"
		eventually(t, "the forward's error", 10*time.Second, func() (bool, string) {
			got := s.errOut.String()
			return strings.Contains(got, want), got
		})
		s.stop()

		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"port-forward", "missing-" + suffix, "8080:80"},
				`Error from server (NotFound): pods "missing-` + suffix + `" not found`},
			{[]string{"--context", "podtrace-viewer", "port-forward", name, ":80"},
				`error: error upgrading connection: pods "` + name + `" is forbidden: User "viewer" cannot create resource "pods/portforward" in API group "" in the namespace "default"`},
		} {
			if got := k.fails(tc.args...); !strings.Contains(got, tc.want) {
				t.Errorf("kubectl %s:\n%s\nwant %q", strings.Join(tc.args, " "), got, tc.want)
			}
		}
	})
}
