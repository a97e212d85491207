package server_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	crirc "k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"

	"github.com/podtrace/podtrace/engine/kubelet/server"
	"github.com/podtrace/podtrace/engine/pki"
)

// fakeHost is a node built from function fields; a nil one answers as a
// node whose containers are not running.
type fakeHost struct {
	pods   map[string]*v1.Pod
	logs   func(ctx context.Context, pod *v1.Pod, container string, opts *v1.PodLogOptions, w io.Writer) error
	exec   func(ctx context.Context, pod *v1.Pod, container string) (server.ExecFunc, error)
	attach func(ctx context.Context, pod *v1.Pod, container string) (server.AttachFunc, error)
	pf     func(ctx context.Context, pod *v1.Pod) (server.PortForwardFunc, error)
}

func (h *fakeHost) GetPodByName(namespace, name string) (*v1.Pod, bool) {
	p, ok := h.pods[namespace+"/"+name]
	return p, ok
}

func (h *fakeHost) ContainerLogs(ctx context.Context, pod *v1.Pod, container string, opts *v1.PodLogOptions, w io.Writer) error {
	return h.logs(ctx, pod, container, opts, w)
}

func (h *fakeHost) Exec(ctx context.Context, pod *v1.Pod, container string) (server.ExecFunc, error) {
	if h.exec == nil {
		return nil, fmt.Errorf("container not found (%q)", container)
	}
	return h.exec(ctx, pod, container)
}

func (h *fakeHost) Attach(ctx context.Context, pod *v1.Pod, container string) (server.AttachFunc, error) {
	if h.attach == nil {
		return nil, fmt.Errorf("container %s not found in pod %s_%s", container, pod.Name, pod.Namespace)
	}
	return h.attach(ctx, pod, container)
}

func (h *fakeHost) PortForward(ctx context.Context, pod *v1.Pod) (server.PortForwardFunc, error) {
	if h.pf == nil {
		return nil, fmt.Errorf("pod not found (%q)", pod.Name+"_"+pod.Namespace)
	}
	return h.pf(ctx, pod)
}

func testPod() *v1.Pod {
	p := &v1.Pod{}
	p.Name, p.Namespace, p.UID = "web", "default", "uid-1"
	p.Spec.Containers = []v1.Container{{Name: "c"}, {Name: "tty", TTY: true}}
	return p
}

// start serves host over TLS with a serving certificate from a cluster CA.
func start(t *testing.T, host server.Host) *server.Server {
	t.Helper()
	b, err := pki.Ensure(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := b.IssueKubeletServing("node-1", net.ParseIP("127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s, err := server.Start(ctx, server.Config{Addr: "127.0.0.1:0", Certificate: cert, Host: host})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if s.Port() == 0 {
		t.Fatal("no port")
	}
	return s
}

var insecure = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}

func get(t *testing.T, s *server.Server, method, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, "https://"+s.Addr()+path, nil)
	resp, err := insecure.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestContainerLogs(t *testing.T) {
	var got *v1.PodLogOptions
	host := &fakeHost{pods: map[string]*v1.Pod{"default/web": testPod()},
		logs: func(_ context.Context, pod *v1.Pod, container string, opts *v1.PodLogOptions, w io.Writer) error {
			got = opts
			if container == "tty" {
				return fmt.Errorf("container %q in pod %q is waiting to start: ContainerCreating", container, pod.Name)
			}
			_, err := io.WriteString(w, "one\ntwo\n")
			return err
		}}
	s := start(t, host)
	code, body := get(t, s, "GET", "/containerLogs/default/web/c?follow=true&tailLines=2&timestamps=true&limitBytes=10&sinceSeconds=5&previous=true")
	if code != 200 || body != "one\ntwo\n" {
		t.Fatalf("logs: %d %q", code, body)
	}
	if !got.Follow || *got.TailLines != 2 || !got.Timestamps || *got.LimitBytes != 10 || *got.SinceSeconds != 5 || !got.Previous {
		t.Fatalf("options %+v", got)
	}
	if _, _ = get(t, s, "GET", "/containerLogs/default/web/c?tail=all"); got.TailLines != nil {
		t.Fatalf("tail=all: tailLines %d", *got.TailLines)
	}
	for _, c := range []struct {
		path string
		code int
		body string
	}{
		{"/containerLogs/default/web/tty", 400, `container "tty" in pod "web" is waiting to start: ContainerCreating`},
		{"/containerLogs/default/nope/c", 404, `pod "nope" does not exist`},
		{"/containerLogs/default/web/x", 404, `container "x" not found in pod "web"`},
		{"/containerLogs/default/web/c?tailLines=-1", 422, `{"message": "Invalid request."}`},
		{"/containerLogs/default/web/c?tailLines=x", 400, `{"message": "Unable to decode query."}`},
		{"/containerLogs/default/web/c?stream=Stdout", 400, `unable to return the given log stream: "Stdout". Please enable PodLogsQuerySplitStreams feature gate in kubelet`},
	} {
		if code, body := get(t, s, "GET", c.path); code != c.code || body != c.body {
			t.Errorf("%s: %d %q, want %d %q", c.path, code, body, c.code, c.body)
		}
	}
}

func TestStreamErrorsBeforeUpgrade(t *testing.T) {
	s := start(t, &fakeHost{pods: map[string]*v1.Pod{"default/web": testPod()}})
	for _, c := range []struct {
		method, path string
		code         int
		body         string
	}{
		{"POST", "/exec/default/nope/c?command=ls&output=1", 404, "pod does not exist"},
		{"POST", "/exec/default/web/c?command=ls&output=1", 500, `container not found ("c")`},
		{"GET", "/attach/default/web/c?output=1", 500, "container c not found in pod web_default"},
		{"POST", "/portForward/default/web?port=80", 500, `pod not found ("web_default")`},
		{"POST", "/portForward/default/web/other-uid?port=80", 404, "pod not found"},
		{"POST", "/exec/default/web/c?command=ls", 400, "you must specify at least 1 of stdin, stdout, stderr"},
	} {
		if code, body := get(t, s, c.method, c.path); code != c.code || body != c.body {
			t.Errorf("%s %s: %d %q, want %d %q", c.method, c.path, code, body, c.code, c.body)
		}
	}
}

// stream runs an exec or attach at path over SPDY, as kube-apiserver's
// proxy (or its websocket translator) does.
func stream(t *testing.T, s *server.Server, path string, stdin io.Reader, tty bool) (string, string, error) {
	t.Helper()
	u, _ := url.Parse("https://" + s.Addr() + path)
	ex, err := remotecommand.NewSPDYExecutor(&rest.Config{TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, "POST", u)
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	opts := remotecommand.StreamOptions{Stdin: stdin, Stdout: &out, Tty: tty}
	if strings.Contains(path, "error=1") {
		opts.Stderr = &errb
	}
	err = ex.StreamWithContext(context.Background(), opts)
	return out.String(), errb.String(), err
}

func TestExecOverSPDY(t *testing.T) {
	host := &fakeHost{pods: map[string]*v1.Pod{"default/web": testPod()},
		exec: func(_ context.Context, _ *v1.Pod, container string) (server.ExecFunc, error) {
			return func(_ context.Context, cmd []string, stdin io.Reader, stdout, stderr io.Writer, _ bool, _ <-chan crirc.TerminalSize) (int, error) {
				var in []byte
				if stdin != nil {
					in, _ = io.ReadAll(stdin)
				}
				fmt.Fprintf(stdout, "%s ran %s with %s", container, strings.Join(cmd, " "), in)
				fmt.Fprint(stderr, "warn")
				if cmd[0] == "false" {
					return 3, nil
				}
				return 0, nil
			}, nil
		}}
	s := start(t, host)
	out, errOut, err := stream(t, s, "/exec/default/web/c?command=echo&command=hi&input=1&output=1&error=1", strings.NewReader("data"), false)
	if err != nil || out != "c ran echo hi with data" || errOut != "warn" {
		t.Fatalf("exec: %q %q %v", out, errOut, err)
	}
	_, _, err = stream(t, s, "/exec/default/web/c?command=false&output=1&error=1", nil, false)
	var exit utilexec.ExitError
	if !errors.As(err, &exit) || exit.ExitStatus() != 3 {
		t.Fatalf("exit: %v", err)
	}
}

func TestUnimplementedStreams(t *testing.T) {
	host := &fakeHost{pods: map[string]*v1.Pod{"default/web": testPod()},
		exec: func(context.Context, *v1.Pod, string) (server.ExecFunc, error) { return server.UnimplementedExec, nil },
		attach: func(context.Context, *v1.Pod, string) (server.AttachFunc, error) {
			return server.UnimplementedAttach, nil
		}}
	s := start(t, host)
	_, _, err := stream(t, s, "/exec/default/web/c?command=ls&output=1", nil, false)
	if err == nil || !strings.Contains(err.Error(), "error executing command in container: "+server.ErrExecUnimplemented.Error()) {
		t.Fatalf("exec: %v", err)
	}
	_, _, err = stream(t, s, "/attach/default/web/c?output=1&error=1", nil, false)
	if err == nil || !strings.Contains(err.Error(), "error attaching to container: "+server.ErrAttachUnimplemented.Error()) {
		t.Fatalf("attach: %v", err)
	}
	// The tty container's attach asks for stderr too: the CRI streaming
	// server refuses it before upgrading.
	if code, body := get(t, s, "POST", "/attach/default/web/tty?output=1&error=1"); code != 500 ||
		body != "rpc error: code = InvalidArgument desc = tty and stderr cannot both be true" {
		t.Fatalf("tty attach: %d %q", code, body)
	}
}
