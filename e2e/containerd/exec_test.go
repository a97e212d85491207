package containerd_test

import (
	"bytes"
	"context"
	"net/url"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
	utilexec "k8s.io/utils/exec"
)

// TestExecRunsInTheContainer runs pods/exec through client-go's executors,
// as kubectl 1.33 (websocket first, SPDY on an upgrade failure) and kubectl
// 1.27 (SPDY) do: the command runs in the real container, stdin reaches it,
// a terminal is one, and a non-zero exit code comes back.
func TestExecRunsInTheContainer(t *testing.T) {
	c := startCluster(t, 1)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "exec", Labels: map[string]string{"app": "exec"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "sh", Image: "podtrace.dev/busybox:1.35",
			Command: []string{"sleep", "3600"}}}}}
	if _, err := c.AdminClient().CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitPods(t, "app=exec", 2*time.Minute, "the pod Ready", func(p []corev1.Pod) bool { return len(p) == 1 && ready(p[0]) })
	for _, tc := range []struct {
		name, stdin, want string
		cmd               []string
		code              int
		tty               bool
	}{
		{name: "echo", cmd: []string{"echo", "hi"}, want: "hi\n"},
		{name: "stdin", cmd: []string{"cat"}, stdin: "from stdin\n", want: "from stdin\n"},
		{name: "tty", cmd: []string{"sh", "-c", "test -t 1 && echo tty"}, want: "tty\r\n", tty: true},
		{name: "exit code", cmd: []string{"sh", "-c", "echo out; exit 3"}, want: "out\n", code: 3},
		// The command ends while the client still sends input.
		{name: "exit before stdin ends", cmd: []string{"head", "-n1"}, stdin: strings.Repeat("y\n", 1<<20), want: "y\n"},
	} {
		for _, proto := range []string{"websocket-fallback", "spdy"} {
			t.Run(tc.name+"/"+proto, func(t *testing.T) {
				out, err := c.exec(t, proto, tc.cmd, tc.stdin, tc.tty)
				if out != tc.want {
					t.Errorf("stdout %q, want %q (err %v)", out, tc.want, err)
				}
				code := 0
				if ee, ok := err.(utilexec.ExitError); ok {
					code = ee.ExitStatus()
				} else if err != nil {
					t.Fatalf("exec: %v", err)
				}
				if code != tc.code {
					t.Errorf("exit code %d, want %d", code, tc.code)
				}
			})
		}
	}
	// No exec is left feeding the stdin of a process that is gone.
	deadline := time.Now().Add(10 * time.Second)
	for stuck := goroutinesIn("containerd.copyStdin"); stuck > 0; stuck = goroutinesIn("containerd.copyStdin") {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines still copying stdin to ended execs", stuck)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// goroutinesIn counts this process's goroutines with fn on their stack.
func goroutinesIn(fn string) int {
	var buf bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
	n := 0
	for _, g := range strings.Split(buf.String(), "\n\n") {
		if strings.Contains(g, fn) {
			n++
		}
	}
	return n
}

// exec runs cmd in pod exec's container with client-go's executor for proto.
func (c *cluster) exec(t *testing.T, proto string, cmd []string, stdin string, tty bool) (string, error) {
	t.Helper()
	req := c.AdminClient().CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("exec").SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Command: cmd, Stdin: stdin != "", Stdout: true, Stderr: !tty, TTY: tty}, scheme.ParameterCodec)
	ex := c.executor(t, proto, req.URL())
	var out, errOut bytes.Buffer
	opts := remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut, Tty: tty}
	if tty {
		opts.Stderr = nil
	}
	if stdin != "" {
		opts.Stdin = strings.NewReader(stdin)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := ex.StreamWithContext(ctx, opts)
	return out.String(), err
}

// executor is client-go's executor for a pods/exec or pods/attach URL, as
// kubectl uses them: SPDY (1.27), or websocket first and SPDY on an upgrade
// failure (1.30+).
func (c *cluster) executor(t *testing.T, proto string, u *url.URL) remotecommand.Executor {
	t.Helper()
	cfg := c.AdminRestConfig()
	spdy, err := remotecommand.NewSPDYExecutor(cfg, "POST", u)
	if err != nil {
		t.Fatal(err)
	}
	if proto != "websocket-fallback" {
		return spdy
	}
	ws, err := remotecommand.NewWebSocketExecutor(cfg, "GET", u.String())
	if err != nil {
		t.Fatal(err)
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, httpstream.IsUpgradeFailure)
	if err != nil {
		t.Fatal(err)
	}
	return ex
}
