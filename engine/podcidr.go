package engine

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	nodeutil "k8s.io/component-helpers/node/util"
	"k8s.io/klog/v2"

	"github.com/podtrace/podtrace/engine/nodes"
)

// podCIDRs maps each node to its pod range, for those that have one.
func podCIDRs(specs []nodes.Spec) map[string]string {
	want := map[string]string{}
	for _, s := range specs {
		if s.PodCIDR != "" {
			want[s.Name] = s.PodCIDR
		}
	}
	return want
}

// assignPodCIDRs gives each Node in want that has none the pod range its
// runtime already uses (nodes.Spec.PodCIDR) as spec.podCIDR and
// spec.podCIDRs, as soon as its kubelet registers it, until ctx ends: the
// part kube-controller-manager's node IPAM controller, or a cloud's, plays
// on a cluster. podtrace fixes each range before the node starts (the
// simulated runtime's addresses, the containerd node's bridge) and a
// scenario may choose it, so it cannot come from the controller's
// allocator. The kubelet then passes it on to its runtime
// (UpdateRuntimeConfig), as on any node.
func assignPodCIDRs(ctx context.Context, client kubernetes.Interface, want map[string]string) {
	if len(want) == 0 {
		return
	}
	assign := func(obj any) {
		node, ok := obj.(*v1.Node)
		if !ok || len(node.Spec.PodCIDRs) > 0 || node.Spec.PodCIDR != "" || want[node.Name] == "" {
			return
		}
		if err := nodeutil.PatchNodeCIDRs(ctx, client, types.NodeName(node.Name), []string{want[node.Name]}); err != nil && ctx.Err() == nil {
			klog.ErrorS(err, "Failed to assign the node its pod range", "node", node.Name, "podCIDR", want[node.Name])
		}
	}
	// The resync retries a patch that failed.
	f := informers.NewSharedInformerFactory(client, 30*time.Second)
	_, _ = f.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    assign,
		UpdateFunc: func(_, obj any) { assign(obj) },
	})
	f.Start(ctx.Done())
}

// hasPodCIDR reports whether node has its pod range, if want gives it one.
func hasPodCIDR(node *v1.Node, want map[string]string) bool {
	return want[node.Name] == "" || node.Spec.PodCIDR != ""
}
