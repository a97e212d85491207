package scenario

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/engine"
)

// SyncNodeFaults applies the active node-not-ready faults once and waits
// (up to a minute) until the node lifecycle controller has tainted or
// untainted every node accordingly, so what is applied next meets the
// cluster as described. It waits on every node, not only those it changed:
// the node set's own watcher (engine/nodeset) may have changed them first.
func SyncNodeFaults(ctx context.Context, e *engine.Engine) {
	want := e.NodeSet.SyncFaults()
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

func hasNotReadyTaint(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady && t.Effect == corev1.TaintEffectNoSchedule {
			return true
		}
	}
	return false
}
