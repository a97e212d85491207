package kubelet

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/stages"
)

func TestContainerLogsAndPrevious(t *testing.T) {
	env := startKubelet(t, 400, nil)
	env.create(t, newPod("talk", v1.Container{Name: "c", Image: "busybox:1.36", Command: []string{"sh", "-c", "echo hello from talk; sleep 1; exit 2"}}))
	env.waitFor(t, "talk", "restarted", func(p *v1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 1
	})
	ctx := context.Background()
	for _, previous := range []bool{true, false} {
		deadline := time.Now().Add(5 * time.Second)
		for {
			lines, err := env.k.ContainerLogs(ctx, "default", "talk", "c", previous)
			if err == nil && len(lines) >= 2 && lines[1].Text == "hello from talk" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("previous=%v: logs %+v %v", previous, lines, err)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if _, err := env.k.ContainerLogs(ctx, "default", "nope", "c", false); err == nil {
		t.Fatal("logs of an unknown pod")
	}
}

func TestNodeRegistrationAndNotReady(t *testing.T) {
	env := startKubelet(t, 100, nil)
	ctx := context.Background()
	ready := func() *v1.NodeCondition {
		n, err := env.client.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
		if err != nil {
			return nil
		}
		for i, c := range n.Status.Conditions {
			if c.Type == v1.NodeReady {
				return &n.Status.Conditions[i]
			}
		}
		return nil
	}
	deadline := time.Now().Add(5 * time.Second)
	for c := ready(); c == nil || c.Status != v1.ConditionTrue; c = ready() {
		if time.Now().After(deadline) {
			t.Fatal("node never Ready")
		}
		time.Sleep(5 * time.Millisecond)
	}
	c := ready()
	if c.Reason != "KubeletReady" || c.Message != "kubelet is posting ready status" {
		t.Fatalf("ready condition %+v", c)
	}
	n, _ := env.client.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	if n.Spec.PodCIDR != "10.244.1.0/24" || n.Labels[v1.LabelHostname] != "node-1" || n.Status.NodeInfo.KubeletVersion != "v1.36.3" {
		t.Fatalf("node %+v", n)
	}
	cpu := n.Status.Allocatable[v1.ResourceCPU]
	if cpu.String() != "4" {
		t.Fatalf("allocatable cpu %s", cpu.String())
	}
	var l *coordinationv1.Lease
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if l, err = env.client.CoordinationV1().Leases(NodeLeaseNamespace).Get(ctx, "node-1", metav1.GetOptions{}); err == nil {
			break
		}
	}
	if err != nil || *l.Spec.HolderIdentity != "node-1" || *l.Spec.LeaseDurationSeconds != 40 {
		t.Fatalf("lease %+v %v", l, err)
	}
	first := l.Spec.RenewTime.Time
	env.k.SetNotReady(true)
	deadline = time.Now().Add(5 * time.Second)
	for c := ready(); c.Status != v1.ConditionFalse; c = ready() {
		if time.Now().After(deadline) {
			t.Fatal("node never NotReady")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if c := ready(); c.Reason != "KubeletNotReady" {
		t.Fatalf("not-ready condition %+v", c)
	}
	// A pod arriving now waits for the network, then starts once the node is Ready.
	env.create(t, newPod("late", v1.Container{Name: "c", Image: "nginx:1.27"}))
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		n := 0
		for _, e := range env.events.forPod("late") {
			if e.Stage == stages.Sandbox && e.Reason == "NetworkNotReady" {
				n++
			}
		}
		if n >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no NetworkNotReady retries")
		}
	}
	env.k.SetNotReady(false)
	env.waitFor(t, "late", "Ready after the node recovered", isReady)
	// The lease is renewed every 10 s of engine time (0.1 s here).
	deadline = time.Now().Add(5 * time.Second)
	for {
		l, _ = env.client.CoordinationV1().Leases(NodeLeaseNamespace).Get(ctx, "node-1", metav1.GetOptions{})
		if l.Spec.RenewTime.Time.After(first) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("lease not renewed")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
