package engine_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/enginetest"
	"github.com/podtrace/podtrace/engine/kubelet/nodes"
	"github.com/podtrace/podtrace/stages"
	"github.com/podtrace/podtrace/version"
)

func startUpstream(t *testing.T, n int) (*engine.Engine, *recorder) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	e, err := engine.Start(ctx, engine.Config{DataDir: t.TempDir(), UnsafeNoFsync: true, Nodes: nodes.Defaults(n), Seed: 1,
		Speed: 20, Kubelet: engine.UpstreamKubelet})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	r := record(e)
	t.Cleanup(func() { cancel(); e.Close() })
	return e, r
}

func TestUpstreamKubeletDeploymentReachesReadyThroughEveryStage(t *testing.T) {
	e, rec := startUpstream(t, 3)
	var n *corev1.Node
	enginetest.WaitFor(t, 30*time.Second, "node-1 registered", func() bool {
		var err error
		n, err = e.AdminClient().CoreV1().Nodes().Get(context.Background(), "node-1", metav1.GetOptions{})
		return err == nil
	})
	if got := n.Status.NodeInfo.KubeletVersion; got != version.Kubernetes {
		t.Errorf("kubeletVersion = %q, want %q", got, version.Kubernetes)
	}
	var want []stages.ID
	for _, s := range stages.Lifecycle {
		if s != stages.Hooks { // the pods have no postStart hook
			want = append(want, s)
		}
	}
	deploymentThroughEveryStage(t, e, rec, want)

	// The kubelet's API answers kube-apiserver (its client certificate,
	// authorized by a SubjectAccessReview) and no one else.
	ctx := context.Background()
	if _, err := e.AdminClient().CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/node-1/proxy/pods").DoRaw(ctx); err != nil {
		t.Errorf("kube-apiserver's proxy to the kubelet: %v", err)
	}
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := insecure.Get(fmt.Sprintf("https://127.0.0.1:%d/pods", e.Nodes[0].Port))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("an anonymous caller of the kubelet's API got %s, want 401", resp.Status)
	}
}

func TestUpstreamKubeletDeletingDeploymentTearsDownEveryPod(t *testing.T) {
	e, rec := startUpstream(t, 3)
	deletingDeploymentTearsDownEveryPod(t, e, rec)
}

// TestUpstreamKubeletFaults injects each node-stage fault at the CRI seam
// and checks the real kubelet's reaction: its Event (reason and words),
// and the stage's failure in the pod's lane.
func TestUpstreamKubeletFaults(t *testing.T) {
	e, rec := startUpstream(t, 1)
	ctx := context.Background()
	exec := func(cmd ...string) *corev1.LifecycleHandler {
		return &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: cmd}}
	}
	cases := []struct {
		stage            stages.ID
		variant          string
		edit             func(*corev1.Container)
		reason, contains string
		laneReason       string
	}{
		{stage: stages.Sandbox, reason: "FailedCreatePodSandBox", contains: "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to create containerd task", laneReason: "FailedCreatePodSandBox"},
		{stage: stages.Pull, variant: "not-found", reason: "Failed", contains: `failed to pull and unpack image "docker.io/library/nginx:1.27"`, laneReason: "ErrImagePull"},
		{stage: stages.Create, reason: "Failed", contains: "failed to create containerd container", laneReason: "CreateContainerError"},
		{stage: stages.Start, reason: "Failed", contains: "executable file not found in $PATH", laneReason: "RunContainerError"},
		{stage: stages.Hooks, edit: func(c *corev1.Container) {
			c.Lifecycle = &corev1.Lifecycle{PostStart: exec("sh", "-c", "echo started")}
		},
			reason: "FailedPostStartHook", contains: "PostStartHook failed", laneReason: "FailedPostStartHook"},
		{stage: stages.Ready, edit: func(c *corev1.Container) {
			c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/ready"}}}, PeriodSeconds: 1}
		}, reason: "Unhealthy", contains: "Readiness probe failed", laneReason: "Unhealthy"},
	}
	for _, c := range cases {
		t.Run(string(c.stage), func(t *testing.T) {
			name := "fault-" + string(c.stage)
			e.Tracer.Faults.Add(stages.Fault{Stage: c.stage, Kind: stages.Fail, Variant: c.variant, Scope: stages.Scope{Pod: "default/" + name}})
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}}}
			if c.edit != nil {
				c.edit(&pod.Spec.Containers[0])
			}
			if _, err := e.AdminClient().CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			var got []string
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("events of %s: %q", name, got)
				}
			})
			enginetest.WaitFor(t, 30*time.Second, "the kubelet's "+c.reason+" event", func() bool {
				evs, err := e.AdminClient().CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
				if err != nil {
					return false
				}
				got = got[:0]
				for _, ev := range evs.Items {
					got = append(got, ev.Reason+": "+ev.Message)
					if ev.Reason == c.reason && strings.Contains(ev.Message, c.contains) && ev.Source.Component == "kubelet" {
						return true
					}
				}
				return false
			})
			lane := false
			for _, ev := range rec.Events() {
				if ev.Pod == name && ev.Stage == c.stage && ev.Status == stages.Retrying && ev.Reason == c.laneReason {
					lane = true
				}
			}
			if !lane {
				t.Errorf("no %s %s in the lane", c.stage, c.laneReason)
			}
		})
	}
}
