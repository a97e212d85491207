package kubectle2e

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestAttach runs kubectl attach and kubectl run -i against the simulated
// runtime: the pod and the user's rights are checked as kube-apiserver
// does, then the real kubelet proxies the stream to the runtime's
// streaming server, which connects it to the container's process: its
// output, and its input when the container has a stdin, whether kubectl
// speaks websocket (falling back) or SPDY.
func TestAttach(t *testing.T) {
	eachKubectl(t, func(t *testing.T, c *cluster, k *kubectl, suffix string) {
		// kubectl run -i: the shell reads what kubectl sends, and its exit
		// status is kubectl's.
		run := "run-" + suffix
		out, errOut, err := k.input("echo $((6*7))\nexit 3\n", "run", "-i", "--rm", "--restart=Never", "--image=busybox", run, "--", "sh")
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 3 || !strings.Contains(out, "42\n") {
			t.Errorf("kubectl run -i ... -- sh: %v, stdout %q, stderr %q; want 42 and exit status 3", err, out, errOut)
		}
		// kubectl attach: the process's output from then on, until it exits.
		// The refusals are asked of a pod that keeps running: kubectl
		// refuses to attach to a completed pod before it asks the server.
		name, idle := "attach-"+suffix, "attach-idle-"+suffix
		k.ok("run", name, "--image=busybox", "--restart=Never", "--", "sh", "-c", "for i in $(seq 1 20); do echo tick $i; sleep 1; done")
		k.ok("run", idle, "--image=busybox", "--restart=Never", "--", "sleep", "3600")
		k.ok("wait", "--for=condition=Ready", "pod/"+name, "pod/"+idle, "--timeout=3m")
		if out, errOut, err := k.run("attach", name); err != nil || !strings.Contains(out, "tick 20\n") {
			t.Errorf("kubectl attach: %v, stdout %q, stderr %q; want the ticks up to 20", err, out, errOut)
		}
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"attach", idle, "-c", "nope"}, "error: cannot attach to the container: container nope not found in pod " + idle},
			{[]string{"attach", "missing-" + suffix},
				`Error from server (NotFound): pods "missing-` + suffix + `" not found`},
			{[]string{"--context", "podtrace-viewer", "attach", idle},
				`pods "` + idle + `" is forbidden: User "viewer" cannot create resource "pods/attach" in API group "" in the namespace "` + k.ns + `"`},
		} {
			if got := k.fails(tc.args...); !strings.Contains(got, tc.want) {
				t.Errorf("kubectl %s:\n%s\nwant %q", strings.Join(tc.args, " "), got, tc.want)
			}
		}
	})
}
