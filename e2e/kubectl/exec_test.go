package kubectle2e

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/podtrace/podtrace/internal/tmuxtest"
)

// TestExec runs kubectl exec against the simulated runtime: the pod, its
// container and the user's rights are checked as kube-apiserver does, then
// the real kubelet proxies the stream to the runtime's streaming server,
// as with containerd, where the command runs in the simulated container
// (engine/cri/sim/proc): with the environment the kubelet gave it, the
// files the kubelet mounted, the user's input, and its exit status,
// whether kubectl speaks websocket (falling back) or SPDY.
func TestExec(t *testing.T) {
	eachKubectl(t, func(t *testing.T, c *cluster, k *kubectl, suffix string) {
		name := "exec-" + suffix
		k.ok("run", name, "--image=busybox", "--env=MODE=debug", "--", "sleep", "infinity")
		k.ok("wait", "--for=condition=Ready", "pod/"+name, "--timeout=3m")
		for _, tc := range []struct {
			stdin string
			args  []string
			want  string
		}{
			{"", []string{"exec", name, "--", "echo", "hi"}, "hi\n"},
			{"", []string{"exec", name, "--", "sh", "-c", "echo $MODE on $HOSTNAME"}, "debug on " + name + "\n"},
			// The service account volume, as the kubelet mounted it.
			{"", []string{"exec", name, "--", "cat", "/var/run/secrets/kubernetes.io/serviceaccount/namespace"}, k.ns},
			{"x=$((6*7))\necho $x\n", []string{"exec", "-i", name, "--", "sh"}, "42\n"},
		} {
			out, errOut, err := k.input(tc.stdin, tc.args...)
			if err != nil || out != tc.want {
				t.Errorf("kubectl %s: %q, %v (%s), want %q", strings.Join(tc.args, " "), out, err, errOut, tc.want)
			}
		}
		// A command's failure: its output, and kubectl's exit status is the command's.
		out, errOut, err := k.run("exec", name, "--", "sh", "-c", "echo oops >&2; exit 3")
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 3 || out != "" || !strings.Contains(errOut, "oops\ncommand terminated with exit code 3") {
			t.Errorf("kubectl exec of a command that fails: %v, stdout %q, stderr %q; want exit status 3", err, out, errOut)
		}
		// A pod bound to a Node no kubelet runs, which advertises no address;
		// the Node goes with the test. Its taint keeps the pods of the tests
		// running beside this one, a DaemonSet's included, off it.
		ghost := "ghost-" + suffix
		k.ok("apply", "-f", k.writeFile(ghost+".yaml", "apiVersion: v1\nkind: Node\nmetadata:\n  name: "+ghost+
			"\nspec:\n  taints: [{key: e2e.podtrace.dev/ghost, effect: NoSchedule}]\n"))
		t.Cleanup(func() {
			if out, errOut, err := k.run("delete", "node", ghost); err != nil {
				t.Errorf("delete node %s: %v\n%s%s", ghost, err, out, errOut)
			}
		})
		k.ok("run", ghost, "--image=busybox", "--overrides", `{"spec":{"nodeName":"`+ghost+`"}}`, "--", "sleep", "infinity")
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"exec", "-i", name, "-c", "nope", "--", "cat"},
				"Error from server (BadRequest): container nope is not valid for pod " + name},
			// A Node without addresses: kube-apiserver cannot reach its kubelet.
			{[]string{"exec", ghost, "--", "echo", "hi"}, "Error from server: no preferred addresses found; known addresses: []"},
			{[]string{"exec", "missing-" + suffix, "--", "echo", "hi"},
				`Error from server (NotFound): pods "missing-` + suffix + `" not found`},
			{[]string{"--context", "podtrace-viewer", "exec", name, "--", "echo", "hi"},
				`Error from server (Forbidden): pods "` + name + `" is forbidden: User "viewer" cannot create resource "pods/exec" in API group "" in the namespace "` + k.ns + `"`},
		} {
			if got := k.fails(tc.args...); !strings.Contains(got, tc.want) {
				t.Errorf("kubectl %s:\n%s\nwant %q", strings.Join(tc.args, " "), got, tc.want)
			}
		}
	})
}

// TestExecTerminal runs kubectl exec -it in a real terminal (tmux): the
// simulated container's shell, on a terminal of its own, prompts, echoes
// what is typed and runs it, and its exit status ends kubectl.
func TestExecTerminal(t *testing.T) {
	tmuxtest.Need(t)
	eachKubectl(t, func(t *testing.T, _ *cluster, k *kubectl, suffix string) {
		name := "tty-" + suffix
		k.ok("run", name, "--image=busybox", "--", "sleep", "infinity")
		k.ok("wait", "--for=condition=Ready", "pod/"+name, "--timeout=3m")
		tm := tmuxtest.Start(t, 100, 20, []string{"KUBECONFIG=" + k.kubeconfig, "HOME=" + k.dir},
			tmuxtest.Quote(k.bin, "exec", "-it", name, "--", "sh")+`; echo "kubectl exited $?"; exec sleep 600`)
		tm.WaitFor("the shell's prompt", waitLong, tmuxtest.Has("/ #")) // tmux trims the space after it
		tm.Keys("echo $((6*7)) from $HOSTNAME", "Enter")
		// The output and the next prompt, on lines of their own: kubectl
		// 1.33 may log a line of its own above the echoed command (client-go's
		// "Unknown stream id 1, discarding message"), which wraps it.
		tm.WaitFor("the command's output", time.Minute, tmuxtest.Has("\n42 from "+name+"\n/ #"))
		tm.Keys("exit 5", "Enter")
		tm.WaitFor("kubectl's exit", time.Minute, tmuxtest.Has("kubectl exited 5"))

		// kubectl run -it: the container's own shell, on its terminal.
		run := "run-tty-" + suffix
		tm = tmuxtest.Start(t, 100, 20, []string{"KUBECONFIG=" + k.kubeconfig, "HOME=" + k.dir},
			tmuxtest.Quote(k.bin, "run", "-it", "--rm", "--restart=Never", "--image=busybox", run, "--", "sh")+`; echo "kubectl exited $?"; exec sleep 600`)
		tm.WaitFor("kubectl's hint", waitLong, tmuxtest.Has("If you don't see a command prompt, try pressing enter."))
		tm.Keys("Enter")
		tm.WaitFor("the shell's prompt", time.Minute, tmuxtest.Has("/ #"))
		tm.Keys("echo $((6*7))", "Enter")
		tm.WaitFor("the command's output", time.Minute, tmuxtest.Has("\n42\n"))
		tm.Keys("exit", "Enter")
		tm.WaitFor("kubectl's exit", waitLong, tmuxtest.Has("kubectl exited 0"))
	})
}
