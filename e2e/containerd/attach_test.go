package containerd_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
)

// TestAttachToTheContainer attaches to containers' main processes through
// client-go's executors, as kubectl 1.33 (websocket first, SPDY on an
// upgrade failure) and kubectl 1.27 (SPDY) do: a shell created with stdin
// reads the client's input and answers, with and without a terminal; a
// stdinOnce cat reads EOF when the client's input ends (kubectl run -i);
// output is streamed to a client without stdin while the log keeps it.
func TestAttachToTheContainer(t *testing.T) {
	c := startCluster(t, 1)
	ctx := context.Background()
	mk := func(name string, ctr corev1.Container) {
		ctr.Name, ctr.Image = "c", "podtrace.dev/busybox:1.35"
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "attach"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{ctr}, RestartPolicy: corev1.RestartPolicyNever}}
		if _, err := c.AdminClient().CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mk("sh", corev1.Container{Command: []string{"sh"}, Stdin: true})
	mk("tty", corev1.Container{Command: []string{"sh"}, Stdin: true, TTY: true})
	mk("cat", corev1.Container{Command: []string{"cat"}, Stdin: true, StdinOnce: true})
	mk("ticks", corev1.Container{Command: []string{"sh", "-c", "while true; do echo tick; sleep 0.1; done"}})
	c.waitPods(t, "app=attach", 2*time.Minute, "the pods Ready", func(p []corev1.Pod) bool {
		n := 0
		for _, pod := range p {
			if ready(pod) {
				n++
			}
		}
		return n == 4
	})
	for _, proto := range []string{"websocket-fallback", "spdy"} {
		for _, tc := range []struct {
			pod, want string
			tty       bool
		}{{"sh", "42\n", false}, {"tty", "42\r\n", true}} {
			t.Run(tc.pod+"/"+proto, func(t *testing.T) {
				// The input stays open until the answer is read, then ends,
				// which ends the attach (not stdinOnce).
				in, send := io.Pipe()
				out := newWatchedBuffer()
				go func() {
					_, _ = io.WriteString(send, "echo $((40+2))\n")
					out.waitFor(tc.want, 30*time.Second)
					send.Close()
				}()
				err := c.attach(t, proto, tc.pod, remotecommand.StreamOptions{Stdin: in, Stdout: out, Tty: tc.tty})
				if err != nil || !strings.Contains(out.String(), tc.want) {
					t.Fatalf("attach: %v, stdout %q, want %q in it", err, out.String(), tc.want)
				}
			})
		}
	}
	t.Run("stdinOnce", func(t *testing.T) {
		out := newWatchedBuffer()
		err := c.attach(t, "spdy", "cat", remotecommand.StreamOptions{Stdin: strings.NewReader("from stdin\n"), Stdout: out, Stderr: io.Discard})
		if err != nil || out.String() != "from stdin\n" {
			t.Fatalf("attach: %v, stdout %q, want %q", err, out.String(), "from stdin\n")
		}
		c.waitPods(t, "app=attach", time.Minute, "cat Succeeded", func(p []corev1.Pod) bool {
			for _, pod := range p {
				if pod.Name == "cat" {
					return pod.Status.Phase == corev1.PodSucceeded
				}
			}
			return false
		})
	})
	for _, proto := range []string{"websocket-fallback", "spdy"} {
		t.Run("no stdin/"+proto, func(t *testing.T) {
			out := newWatchedBuffer()
			actx, cancel := context.WithCancel(ctx)
			go func() {
				out.waitFor("tick\ntick\n", 30*time.Second)
				cancel()
			}()
			_ = c.attachCtx(t, actx, proto, "ticks", remotecommand.StreamOptions{Stdout: out, Stderr: io.Discard})
			if !strings.Contains(out.String(), "tick\ntick\n") {
				t.Fatalf("stdout %q, want ticks", out.String())
			}
		})
	}
	// The log still gets the output attached clients see.
	raw, err := c.AdminClient().CoreV1().Pods("default").GetLogs("ticks", &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil || !strings.HasPrefix(string(raw), "tick\ntick\n") {
		t.Fatalf("logs: %v, %q", err, raw)
	}
	// No attach is left waiting or copying input once its client is gone.
	deadline := time.Now().Add(10 * time.Second)
	for _, fn := range []string{"containerd.(*containerIO).attach", "containerd.(*containerIO).feedStdin"} {
		for n := goroutinesIn(fn); n > 0; n = goroutinesIn(fn) {
			if time.Now().After(deadline) {
				t.Fatalf("%d goroutines left in %s", n, fn)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// attach attaches to pod's container with client-go's executor for proto.
func (c *cluster) attach(t *testing.T, proto, pod string, opts remotecommand.StreamOptions) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return c.attachCtx(t, ctx, proto, pod, opts)
}

// attachCtx is attach under ctx.
func (c *cluster) attachCtx(t *testing.T, ctx context.Context, proto, pod string, opts remotecommand.StreamOptions) error {
	t.Helper()
	req := c.AdminClient().CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name(pod).SubResource("attach").
		VersionedParams(&corev1.PodAttachOptions{Stdin: opts.Stdin != nil, Stdout: opts.Stdout != nil, Stderr: opts.Stderr != nil, TTY: opts.Tty},
			scheme.ParameterCodec)
	ex := c.executor(t, proto, req.URL())
	return ex.StreamWithContext(ctx, opts)
}

// watchedBuffer is a buffer written by an attach's output copy that a test
// can wait on.
type watchedBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{}
}

func newWatchedBuffer() *watchedBuffer { return &watchedBuffer{changed: make(chan struct{}, 1)} }

func (w *watchedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case w.changed <- struct{}{}:
	default:
	}
	return w.b.Write(p)
}

func (w *watchedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// waitFor waits until the buffer holds s, or limit passes.
func (w *watchedBuffer) waitFor(s string, limit time.Duration) {
	deadline := time.After(limit)
	for !strings.Contains(w.String(), s) {
		select {
		case <-w.changed:
		case <-deadline:
			return
		}
	}
}
