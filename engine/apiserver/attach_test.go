package apiserver_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/podtrace/podtrace/engine/enginetest"
)

// TestAttachChecks runs kube-apiserver's AttachREST checks (create on
// pods/attach, the pod, its container, its node) and the kubelet's before
// any upgrade: a stream must be asked for, and a container with a terminal
// (init or regular; the spec's setting, not the request's) gives no stderr.
func TestAttachChecks(t *testing.T) {
	env := enginetest.Start(t)
	ctx := context.Background()
	admin := env.Admin()
	unscheduled, placed := pod("unscheduled"), pod("placed")
	placed.Spec.NodeName = "node-1"
	placed.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox", TTY: true, Stdin: true}}
	placed.Spec.Containers = append(placed.Spec.Containers, corev1.Container{Name: "term", Image: "busybox", TTY: true, Stdin: true})
	for _, p := range []*corev1.Pod{unscheduled, placed} {
		if _, err := admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ttyStderr := "rpc error: code = InvalidArgument desc = tty and stderr cannot both be true"
	both := corev1.PodAttachOptions{Stdout: true, Stderr: true}
	for _, tc := range []struct {
		name, pod, container, want string
		opts                       corev1.PodAttachOptions
		client                     kubernetes.Interface
		code                       int32
		upgrade                    bool // asked as kubectl does: a SPDY upgrade
	}{
		{name: "unknown pod", pod: "missing", container: "app", opts: both, client: admin, code: http.StatusNotFound,
			want: `pods "missing" not found`},
		{name: "invalid container", pod: "placed", container: "nope", opts: both, client: admin, code: http.StatusBadRequest,
			want: "container nope is not valid for pod placed"},
		{name: "no container named", pod: "placed", opts: both, client: admin, code: http.StatusBadRequest,
			want: "a container name must be specified for pod placed, choose one of: [init app term]"},
		{name: "no node", pod: "unscheduled", opts: both, client: admin, code: http.StatusBadRequest,
			want: "pod unscheduled does not have a host assigned"},
		{name: "no create", pod: "placed", container: "app", opts: both, client: env.ClientFor(t, "nobody"), code: http.StatusForbidden,
			want: `pods "placed" is forbidden: User "nobody" cannot create resource "pods/attach" in API group "" in the namespace "default"`},
		{name: "no upgrade", pod: "placed", container: "app", opts: both, client: admin, code: http.StatusBadRequest,
			want: "Upgrade request required"},
		// Past the API server's checks, the kubelet's.
		{name: "no stream", pod: "placed", container: "app", upgrade: true,
			want: "you must specify at least 1 of stdin, stdout, stderr"},
		{name: "terminal and stderr", pod: "placed", container: "term", opts: both, upgrade: true, want: ttyStderr},
		{name: "init terminal and stderr", pod: "placed", container: "init", opts: both, upgrade: true, want: ttyStderr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.Container = tc.container
			if tc.upgrade {
				if err := spdyAttach(t, env, tc.pod, opts); err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("attach: %v; want %q", err, tc.want)
				}
				return
			}
			req := tc.client.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name(tc.pod).SubResource("attach").
				VersionedParams(&opts, scheme.ParameterCodec)
			err := req.Do(ctx).Error()
			var code int32
			if s, ok := err.(apierrors.APIStatus); ok {
				code = s.Status().Code
			}
			if code != tc.code || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("status %d, %v; want %d, %q", code, err, tc.code, tc.want)
			}
		})
	}
}

// spdyAttach attaches to pod as kubectl 1.27 does (a SPDY upgrade, the
// admin's credentials) with the streams opts asks for, and returns the
// executor's error.
func spdyAttach(t *testing.T, env *enginetest.Env, pod string, opts corev1.PodAttachOptions) error {
	t.Helper()
	req := env.Admin().CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name(pod).SubResource("attach").
		VersionedParams(&opts, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(env.AdminConfig(), "POST", req.URL())
	if err != nil {
		t.Fatal(err)
	}
	var streams remotecommand.StreamOptions
	if opts.Stdout {
		streams.Stdout = io.Discard
	}
	if opts.Stderr {
		streams.Stderr = io.Discard
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return ex.StreamWithContext(ctx, streams)
}
