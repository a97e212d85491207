package agent_test

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/podtrace/podtrace/engine/agent"
	"github.com/podtrace/podtrace/engine/enginetest"
	"github.com/podtrace/podtrace/engine/logs"
	"github.com/podtrace/podtrace/engine/nodes"
	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

// TestAgentRunsBoundPods starts a bare control plane (no scheduler, no
// kubelets), runs two agent nodes against it with the admin's kubeconfig
// credentials, binds a pod to one of them by spec.nodeName, and expects
// the pod Ready with the node-side stages reported in order.
func TestAgentRunsBoundPods(t *testing.T) {
	logs.To(io.Discard)
	env := enginetest.Start(t)
	hub := trace.NewHub()
	rec := hub.Record()
	a, err := agent.New(agent.Config{RestConfig: env.AdminConfig(), Nodes: nodes.Defaults(2), Hub: hub, Seed: 1, DataDir: kubeletDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(env.Ctx, 60*time.Second)
	defer cancel()
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	admin := env.Admin()
	node, err := admin.CoreV1().Nodes().Get(ctx, "node-2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := node.Status.Allocatable.Cpu().String(); got != nodes.DefaultCPU {
		t.Errorf("node-2 allocatable cpu %s, want %s", got, nodes.DefaultCPU)
	}
	// kube-controller-manager's root-ca-cert-publisher gives the namespace
	// kube-root-ca.crt, which the pod's service account volume needs.
	enginetest.WaitFor(t, 30*time.Second, "kube-root-ca.crt in default", func() bool {
		_, err := admin.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err == nil
	})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "node-2", Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}}}
	if _, err := admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			p, _ := admin.CoreV1().Pods("default").Get(ctx, "hello", metav1.GetOptions{})
			t.Logf("pod: %+v", p.Status)
			for _, e := range rec.Events() {
				t.Logf("%s %s %s %s %s", e.Pod, e.Stage, e.Status, e.Reason, e.Message)
			}
		}
	}()
	enginetest.WaitFor(t, 30*time.Second, "pod hello Ready", func() bool {
		p, err := admin.CoreV1().Pods("default").Get(ctx, "hello", metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return p.Status.HostIP != "" && p.Status.PodIP != ""
			}
		}
		return false
	})
	// The ready stage comes from the pod's status as the agent's watch sees
	// it, a moment after the API answers with it.
	var order []stages.ID
	var nodes []string
	enginetest.WaitFor(t, 10*time.Second, "the ready stage", func() bool {
		order, nodes = nil, nil
		seen := map[stages.ID]bool{}
		for _, e := range rec.Events() {
			if e.Pod == "hello" && e.Status == stages.Succeeded && !seen[e.Stage] {
				seen[e.Stage] = true
				order, nodes = append(order, e.Stage), append(nodes, e.Node)
			}
		}
		return seen[stages.Ready]
	})
	for i, n := range nodes {
		if n != "node-2" {
			t.Errorf("%s event on node %q, want node-2", order[i], n)
		}
	}
	want := []stages.ID{stages.Kubelet, stages.Sandbox, stages.CNI, stages.Pull, stages.Create, stages.Start, stages.Hooks, stages.Ready}
	if strings.Join(ids(order), ",") != strings.Join(ids(want), ",") {
		t.Errorf("stages %v, want %v", order, want)
	}
	evs, err := admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]bool{}
	for _, e := range evs.Items {
		if e.InvolvedObject.Name == "hello" && e.Source.Component == "kubelet" && e.Source.Host == "node-2" {
			reasons[e.Reason] = true
		}
	}
	for _, r := range []string{"Pulling", "Pulled", "Created", "Started"} {
		if !reasons[r] {
			t.Errorf("no %s Event from kubelet on node-2 (got %v)", r, reasons)
		}
	}
}

func TestAgentFailsInOneLine(t *testing.T) {
	a, err := agent.New(agent.Config{RestConfig: &rest.Config{Host: "https://127.0.0.1:1", Timeout: 2 * time.Second},
		Nodes: nodes.Defaults(1), DataDir: kubeletDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	err = a.Start(context.Background())
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), "cannot reach the API server: ") {
		t.Fatalf("error %q, want one line starting 'cannot reach the API server: '", err)
	}
	if _, err := agent.New(agent.Config{RestConfig: &rest.Config{Host: "https://127.0.0.1:1"}, DataDir: kubeletDir(t)}); err == nil {
		t.Fatal("New accepted no nodes")
	}
	if _, err := agent.New(agent.Config{RestConfig: &rest.Config{Host: "https://127.0.0.1:1"}, Nodes: nodes.Defaults(1)}); err == nil {
		t.Fatal("New accepted no DataDir")
	}
}

// kubeletDir is a data dir for the test's kubelets. Not t.TempDir: a real
// kubelet may still write under its root directory for a moment after it
// stops, and the test's removal would fail.
func kubeletDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "podtrace-agent-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func ids(s []stages.ID) []string {
	out := make([]string, len(s))
	for i, id := range s {
		out[i] = string(id)
	}
	return out
}
