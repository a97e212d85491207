package scenario

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/stages"
)

// NodeNotReady is the kubelet-stage variant that takes a whole node down.
const NodeNotReady = "node-not-ready"

// notReadyTaint is what the node lifecycle controller puts on a NotReady node.
var notReadyTaint = corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}

// WatchNodeFaults keeps nodes in step with kubelet:fail:node-not-ready
// faults until ctx ends: a node in such a fault's scope (a node scope, or
// every node) reports Ready=False and gets the node.kubernetes.io/not-ready
// NoSchedule taint, as the node lifecycle controller would add; removing the
// fault makes it Ready again and removes the taint.
func WatchNodeFaults(ctx context.Context, e *engine.Engine) {
	pending := map[string]bool{} // nodes whose taint write failed: tried again every second
	for {
		changed := e.Tracer.Faults.Changed()
		pending = syncNodeFaults(ctx, e, pending)
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-time.After(time.Second):
		}
	}
}

// SyncNodeFaults applies the active node-not-ready faults once.
func SyncNodeFaults(ctx context.Context, e *engine.Engine) { syncNodeFaults(ctx, e, nil) }

// syncNodeFaults brings each node's readiness and taint in line with the
// faults; it returns the nodes whose taint could not be written.
func syncNodeFaults(ctx context.Context, e *engine.Engine, pending map[string]bool) map[string]bool {
	faults := e.Tracer.Faults.List()
	failed := map[string]bool{}
	for _, k := range e.Kubelets {
		want := false
		for _, f := range faults {
			if f.Stage == stages.Kubelet && f.Variant == NodeNotReady && f.Kind != stages.Delay &&
				f.Scope.Pod == "" && (f.Scope.Node == "" || f.Scope.Node == k.NodeName()) {
				want = true
			}
		}
		if k.NotReady() == want && !pending[k.NodeName()] {
			continue
		}
		// The taint first: the kubelet's status write that follows must not
		// race with this update of the same Node.
		if err := setNotReadyTaint(ctx, e, k.NodeName(), want); err != nil {
			failed[k.NodeName()] = true
		}
		k.SetNotReady(want)
	}
	return failed
}

func setNotReadyTaint(ctx context.Context, e *engine.Engine, node string, present bool) error {
	nodes := e.AdminClient().CoreV1().Nodes()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := nodes.Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var taints []corev1.Taint
		has := false
		for _, t := range n.Spec.Taints {
			if t.Key == notReadyTaint.Key && t.Effect == notReadyTaint.Effect {
				has = true
				if !present {
					continue
				}
			}
			taints = append(taints, t)
		}
		if has == present {
			return nil
		}
		if present {
			t := notReadyTaint
			now := metav1.NewTime(e.Clock.Now())
			t.TimeAdded = &now
			taints = append(taints, t)
		}
		n.Spec.Taints = taints
		_, err = nodes.Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
}
