package main

import (
	"bufio"
	"bytes"
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
// runs there, and the agent prints its stage events with --events. With
// root, the same with real containers (--runtime containerd).
func TestAgentJoinsACluster(t *testing.T) {
	bin := podtracebin.Path(t)
	dir := t.TempDir()
	var serveOut, serveErr bytes.Buffer
	startBin(t, bin, &serveOut, &serveErr, "serve", "--nodes", "1", "--data-dir", filepath.Join(dir, "cluster"))
	kubeconfig := filepath.Join(dir, "cluster", "kubeconfig")
	waitFile(t, kubeconfig, 30*time.Second, func(b []byte) bool { return len(b) > 0 })
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c := kubernetes.NewForConfigOrDie(cfg)

	runtimes := []struct{ name, image string }{{"sim", "nginx:1.27"}}
	if os.Geteuid() == 0 {
		runtimes = append(runtimes, struct{ name, image string }{"containerd", "podtrace.dev/demo:1.0"})
	}
	for _, rt := range runtimes {
		t.Run(rt.name, func(t *testing.T) {
			prefix := "agent-" + rt.name + "-"
			node := prefix + "node-1"
			out, errOut := &syncbuf.Buffer{}, &syncbuf.Buffer{}
			// A pod range of its own: e2e/containerd's clusters may have
			// bridges for the default ranges on this machine meanwhile.
			nodesFile := filepath.Join(dir, rt.name+"-nodes.yaml")
			if err := os.WriteFile(nodesFile, []byte("nodes:\n- name: "+node+"\n  podCIDR: 10.245.1.0/24\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			agent := startBin(t, bin, out, errOut, "agent", "--kubeconfig", kubeconfig, "--nodes", nodesFile,
				"--runtime", rt.name, "--events", "--data-dir", filepath.Join(dir, rt.name))
			waittest.Eventually(t, "the agent's node Ready", 2*time.Minute, func() (bool, string) {
				s := errOut.String()
				return strings.Contains(s, "1 node(s) Ready"), "agent stderr: " + s
			})
			ctx := context.Background()
			name := "on-" + rt.name
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
				Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: rt.image}}}}
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
		})
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
