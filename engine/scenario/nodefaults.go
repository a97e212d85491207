package scenario

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/stages"
)

// NodeNotReady is the kubelet-stage variant that takes a whole node down.
const NodeNotReady = "node-not-ready"

// WatchNodeFaults keeps nodes in step with kubelet:fail:node-not-ready
// faults until ctx ends: a node in such a fault's scope (a node scope, or
// every node) reports Ready=False, and kube-controller-manager's node
// lifecycle controller taints it node.kubernetes.io/not-ready, as it would
// any node whose kubelet says so; removing the fault makes it Ready again.
func WatchNodeFaults(ctx context.Context, e *engine.Engine) {
	for {
		changed := e.Tracer.Faults.Changed()
		syncNodeFaults(e)
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}

// SyncNodeFaults applies the active node-not-ready faults once and waits
// (up to a minute) until the node lifecycle controller has tainted or
// untainted every node accordingly, so what is applied next meets the
// cluster as described. It waits on every node, not only those it changed:
// WatchNodeFaults may have changed them first.
func SyncNodeFaults(ctx context.Context, e *engine.Engine) {
	want := syncNodeFaults(e)
	deadline := time.Now().Add(time.Minute)
	for node, notReady := range want {
		for time.Now().Before(deadline) && ctx.Err() == nil {
			n, err := e.AdminClient().CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			if err == nil && hasNotReadyTaint(n) == notReady {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// syncNodeFaults brings each kubelet's readiness in line with the faults and
// returns, for every node, whether it should now be NotReady.
func syncNodeFaults(e *engine.Engine) map[string]bool {
	faults := e.Tracer.Faults.List()
	want := map[string]bool{}
	for _, k := range e.CRIHooks {
		down := false
		for _, f := range faults {
			if f.Stage == stages.Kubelet && f.Variant == NodeNotReady && f.Kind != stages.Delay &&
				f.Scope.Pod == "" && (f.Scope.Node == "" || f.Scope.Node == k.NodeName()) {
				down = true
			}
		}
		if k.NotReady() != down {
			k.SetNotReady(down)
		}
		want[k.NodeName()] = down
	}
	return want
}

func hasNotReadyTaint(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady && t.Effect == corev1.TaintEffectNoSchedule {
			return true
		}
	}
	return false
}
