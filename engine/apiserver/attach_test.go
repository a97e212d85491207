package apiserver_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

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
	for _, tc := range []struct {
		name, pod, container, want string
		opts                       corev1.PodAttachOptions
		client                     kubernetes.Interface
		code                       int32
	}{
		{name: "unknown pod", pod: "missing", container: "app", client: admin, code: http.StatusNotFound,
			want: `pods "missing" not found`},
		{name: "invalid container", pod: "placed", container: "nope", client: admin, code: http.StatusBadRequest,
			want: "container nope is not valid for pod placed"},
		{name: "no container named", pod: "placed", client: admin, code: http.StatusBadRequest,
			want: "a container name must be specified for pod placed, choose one of: [init app term]"},
		{name: "no node", pod: "unscheduled", client: admin, code: http.StatusBadRequest,
			want: "pod unscheduled does not have a host assigned"},
		{name: "no stream", pod: "placed", container: "app", opts: corev1.PodAttachOptions{Stdout: false}, client: admin,
			code: http.StatusBadRequest, want: "you must specify at least 1 of stdin, stdout, stderr"},
		{name: "terminal and stderr", pod: "placed", container: "term", client: admin, code: http.StatusInternalServerError, want: ttyStderr},
		{name: "init terminal and stderr", pod: "placed", container: "init", client: admin, code: http.StatusInternalServerError, want: ttyStderr},
		{name: "no create", pod: "placed", container: "app", client: env.ClientFor(t, "nobody"), code: http.StatusForbidden,
			want: `pods "placed" is forbidden: User "nobody" cannot create resource "pods/attach" in API group "" in the namespace "default"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			if tc.name != "no stream" {
				opts = corev1.PodAttachOptions{Stdout: true, Stderr: true}
			}
			opts.Container = tc.container
			req := tc.client.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name(tc.pod).SubResource("attach")
			if opts.Container != "" {
				req = req.Param("container", opts.Container)
			}
			for k, on := range map[string]bool{"stdout": opts.Stdout, "stderr": opts.Stderr} {
				if on {
					req = req.Param(k, "true")
				}
			}
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
