package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podtrace/podtrace/internal/podtracebin"
	"github.com/podtrace/podtrace/internal/syncbuf"
	"github.com/podtrace/podtrace/internal/waittest"
	"github.com/podtrace/podtrace/stages"
)

// TestAgentJoinsACluster serves a one-node cluster and adds a podtrace
// agent node to it from its kubeconfig; a pod bound to the agent's node
// runs there, and the agent prints its stage events with --events. The
// agent and the cluster are processes of their own, on the simulated
// runtime: the test runs in parallel with the package's others.
func TestAgentJoinsACluster(t *testing.T) {
	t.Parallel()
	agentJoins(t, "sim", "nginx:1.27")
}

// TestAgentJoinsAClusterOnContainerd is TestAgentJoinsACluster with real
// containers (--runtime containerd), with root only. It does not run in
// parallel: it uses the machine's containerd, bridges and nat table.
func TestAgentJoinsAClusterOnContainerd(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("--runtime containerd needs root")
	}
	agentJoins(t, "containerd", "podtrace.dev/demo:1.0")
}

// agentJoins serves a one-node cluster, starts an agent on runtime rt with
// one node, runs a pod of image there, and checks the agent printed its
// stages.
func agentJoins(t *testing.T, rt, image string) {
	bin := podtracebin.Path(t)
	dir := t.TempDir()
	var serveOut, serveErr syncbuf.Buffer
	startBin(t, bin, &serveOut, &serveErr, "serve", "--nodes", "1", "--data-dir", filepath.Join(dir, "cluster"))
	kubeconfig := filepath.Join(dir, "cluster", "kubeconfig")
	waitFile(t, kubeconfig, clusterStart, func(b []byte) bool { return len(b) > 0 })
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c := kubernetes.NewForConfigOrDie(cfg)
	waitAPIReady(t, c, &serveErr)

	prefix := "agent-" + rt + "-"
	node := prefix + "node-1"
	out, errOut := &syncbuf.Buffer{}, &syncbuf.Buffer{}
	// A pod range of its own: e2e/containerd's clusters may have
	// bridges for the default ranges on this machine meanwhile.
	nodesFile := filepath.Join(dir, rt+"-nodes.yaml")
	if err := os.WriteFile(nodesFile, []byte("nodes:\n- name: "+node+"\n  podCIDR: 10.245.1.0/24\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	agent := startBin(t, bin, out, errOut, "agent", "--kubeconfig", kubeconfig, "--nodes", nodesFile,
		"--runtime", rt, "--events", "--data-dir", filepath.Join(dir, rt))
	waittest.Eventually(t, "the agent's node Ready", 2*time.Minute, func() (bool, string) {
		s := errOut.String()
		return strings.Contains(s, "1 node(s) Ready"), "agent stderr: " + s + "\nserve stderr: " + serveErr.String()
	})
	ctx := context.Background()
	name := "on-" + rt
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: image}}}}
	if _, err := c.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer c.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{})
	waittest.Eventually(t, "the pod on "+node+" Running and Ready", 2*time.Minute, func() (bool, string) {
		p, err := c.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.PodRunning && podReady(p), fmt.Sprintf("%+v", p.Status)
	})
	// The kubelet's status manager reports the Ready it wrote (the
	// ready stage) just after the API server has it: wait for the
	// agent to print it before stopping the agent.
	waittest.Eventually(t, "the agent to print "+name+"'s ready stage", 2*time.Minute, func() (bool, string) {
		return printedReady(out.String(), name), ""
	})
	_ = agent.Process.Signal(syscall.SIGINT)
	if err := agent.Wait(); err != nil {
		t.Errorf("agent did not stop cleanly: %v (%s)", err, errOut.String())
	}
	seen := map[stages.ID]bool{}
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e stages.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("--events line %q: %v", sc.Text(), err)
		}
		if e.Pod == name && e.Status == stages.Succeeded {
			seen[e.Stage] = true
		}
	}
	for _, s := range []stages.ID{stages.Kubelet, stages.Sandbox, stages.CNI, stages.Pull, stages.Create, stages.Start, stages.Ready} {
		if !seen[s] {
			t.Errorf("agent printed no %s succeeded for %s", s, name)
		}
	}
}

// printedReady reports whether the JSON lines in out hold a succeeded ready
// stage of pod.
func printedReady(out, pod string) bool {
	for _, line := range strings.Split(out, "\n") {
		var e stages.Event
		if json.Unmarshal([]byte(line), &e) == nil && e.Pod == pod && e.Stage == stages.Ready && e.Status == stages.Succeeded {
			return true
		}
	}
	return false
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
