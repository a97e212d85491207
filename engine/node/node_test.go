package node_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	nodeutil "k8s.io/kubernetes/pkg/util/node"

	"github.com/podtrace/podtrace/engine/controlplane"
	"github.com/podtrace/podtrace/engine/cri/sim"
	"github.com/podtrace/podtrace/engine/identity"
	"github.com/podtrace/podtrace/engine/node"
	"github.com/podtrace/podtrace/engine/nodes"
	"github.com/podtrace/podtrace/internal/waittest"
	"github.com/podtrace/podtrace/version"
)

var (
	cp  *controlplane.ControlPlane
	dir string
)

var names = []string{"node-1", "node-2", "node-3"}

func TestMain(m *testing.M) {
	var err error
	dir, err = os.MkdirTemp("", "podtrace-node-")
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cp, err = controlplane.Start(ctx, controlplane.Config{DataDir: dir, UnsafeNoFsync: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start control plane:", err)
		os.Exit(1)
	}
	code := m.Run()
	cancel()
	cp.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestKubeletsRegisterAndRunPods(t *testing.T) {
	ctx := t.Context()
	for _, n := range names {
		kc, err := cp.RestConfig(identity.NodeUser(n), "kubelet/"+version.Kubernetes)
		if err != nil {
			t.Fatal(err)
		}
		rt, err := sim.New(sim.Config{Node: n, PodCIDR: "10.244.1.0/24", Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		cert, err := cp.PKI.IssueKubeletServing(n)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := node.Start(ctx, node.Config{Spec: nodes.Spec{Name: n, Capacity: nodes.DefaultCapacity()},
			Dir: filepath.Join(dir, "kubelet", n), KubeConfig: kc, Runtime: rt,
			Images: rt, ServingCert: cert}); err != nil {
			t.Fatal(err)
		}
	}
	admin := kubernetes.NewForConfigOrDie(cp.AdminConfig())
	waittest.EventuallyEvery(t, fmt.Sprintf("%d Ready nodes", len(names)), 200*time.Millisecond, 2*time.Minute, func() (bool, string) {
		l, err := admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		ready := 0
		for _, n := range l.Items {
			if nodeutil.IsNodeReady(&n) {
				ready++
			}
		}
		return ready == len(names), fmt.Sprintf("%d of %d nodes Ready", ready, len(l.Items))
	})
	n, err := admin.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := n.Status.NodeInfo.KubeletVersion; got != version.Kubernetes {
		t.Errorf("kubeletVersion = %q, want %q", got, version.Kubernetes)
	}
	if got := n.Status.Capacity.Cpu().String(); got != "4" {
		t.Errorf("cpu capacity = %s, want 4", got)
	}
	t.Logf("addresses %v endpoint %v", n.Status.Addresses, n.Status.DaemonEndpoints)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "web", Image: "nginx:1.27"}}}}
	if _, err := admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waittest.EventuallyEvery(t, "pod web Running", 200*time.Millisecond, 2*time.Minute, func() (bool, string) {
		p, err := admin.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == v1.PodRunning, fmt.Sprintf("phase %s, conditions %v", p.Status.Phase, p.Status.Conditions)
	})
}
