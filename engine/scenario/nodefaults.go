package scenario

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/podtrace/podtrace/engine"
)

// SyncNodeFaults applies the active node-not-ready faults once and waits
// (up to a minute) until the node lifecycle controller has tainted or
// untainted every node accordingly, so what is applied next meets the
// cluster as described. It waits on every node, not only those it changed:
// the node set's own watcher (engine/nodeset) may have changed them first.
func SyncNodeFaults(ctx context.Context, e *engine.Engine) {
	want := e.NodeSet.SyncFaults()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	c := e.AdminClient()
	for node, notReady := range want {
		// A time-out is not an error here: the scenario goes on as it is.
		_ = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			n, err := c.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			return err == nil && hasNotReadyTaint(n) == notReady, nil
		})
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
