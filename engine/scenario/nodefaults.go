package scenario

import (
	"context"

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
	for {
		changed := e.Tracer.Faults.Changed()
		SyncNodeFaults(ctx, e)
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}

// SyncNodeFaults applies the active node-not-ready faults once.
func SyncNodeFaults(ctx context.Context, e *engine.Engine) {
	faults := e.Tracer.Faults.List()
	for _, k := range e.Kubelets {
		want := false
		for _, f := range faults {
			if f.Stage == stages.Kubelet && f.Variant == NodeNotReady && f.Kind != stages.Delay &&
				f.Scope.Pod == "" && (f.Scope.Node == "" || f.Scope.Node == k.NodeName()) {
				want = true
			}
		}
		if k.NotReady() == want {
			continue
		}
		k.SetNotReady(want)
		_ = setNotReadyTaint(ctx, e, k.NodeName(), want) // the next change tries again
	}
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
