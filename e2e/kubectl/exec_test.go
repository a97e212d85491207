package kubectle2e

import (
	"strings"
	"testing"
)

// TestExec runs kubectl exec against the simulated runtime: the pod, its
// container and the user's rights are checked as kube-apiserver does, then
// the real kubelet proxies the stream to the runtime's streaming server,
// as with containerd, whose answer is the CRI's Unimplemented (a simulated
// container has no process), whether kubectl speaks websocket (falling
// back) or SPDY.
func TestExec(t *testing.T) {
	eachKubectl(t, func(t *testing.T, c *cluster, k *kubectl, suffix string) {
		name := "exec-" + suffix
		k.ok("run", name, "--image=busybox", "--", "sleep", "infinity")
		k.ok("wait", "--for=condition=Ready", "pod/"+name, "--timeout=60s")
		// A pod bound to a Node no kubelet runs, which advertises no address.
		ghost := "ghost-" + suffix
		k.ok("apply", "-f", k.writeFile(ghost+".yaml", "apiVersion: v1\nkind: Node\nmetadata:\n  name: "+ghost+"\n"))
		k.ok("run", ghost, "--image=busybox", "--overrides", `{"spec":{"nodeName":"`+ghost+`"}}`, "--", "sleep", "infinity")
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"exec", name, "--", "echo", "hi"},
				"error executing command in container: rpc error: code = Unimplemented desc = podtrace-sim runs no processes: exec is not simulated"},
			{[]string{"exec", "-i", name, "-c", "nope", "--", "cat"},
				"Error from server (BadRequest): container nope is not valid for pod " + name},
			// A Node without addresses: kube-apiserver cannot reach its kubelet.
			{[]string{"exec", ghost, "--", "echo", "hi"}, "Error from server: no preferred addresses found; known addresses: []"},
			{[]string{"exec", "missing-" + suffix, "--", "echo", "hi"},
				`Error from server (NotFound): pods "missing-` + suffix + `" not found`},
			{[]string{"--context", "podtrace-viewer", "exec", name, "--", "echo", "hi"},
				`Error from server (Forbidden): pods "` + name + `" is forbidden: User "viewer" cannot create resource "pods/exec" in API group "" in the namespace "default"`},
		} {
			if got := k.fails(tc.args...); !strings.Contains(got, tc.want) {
				t.Errorf("kubectl %s:\n%s\nwant %q", strings.Join(tc.args, " "), got, tc.want)
			}
		}
	})
}
