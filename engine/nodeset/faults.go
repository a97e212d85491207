package nodeset

import (
	"context"

	"github.com/podtrace/podtrace/stages"
)

// NodeNotReady is the kubelet-stage variant that takes a whole node down.
const NodeNotReady = "node-not-ready"

// watchFaults starts the set's two fault watchers, which run until ctx
// ends: node-not-ready faults take their nodes' readiness (watchNodeFaults),
// and ready faults make the simulated pods stop or resume answering on
// their addresses (recheckOnFaults). Without a Tracer there are no faults
// to follow.
func (s *Set) watchFaults(ctx context.Context) {
	if s.cfg.Tracer == nil {
		return
	}
	go s.watchNodeFaults(ctx)
	var rechecks []func()
	for _, r := range s.runtimes {
		if r.Recheck != nil {
			rechecks = append(rechecks, r.Recheck)
		}
	}
	if len(rechecks) > 0 {
		go s.recheckOnFaults(ctx, rechecks)
	}
}

// recheckOnFaults calls each runtime's Recheck whenever the faults change
// (a ready fault makes its simulated pods stop answering, its removal
// makes them answer again), until ctx ends.
func (s *Set) recheckOnFaults(ctx context.Context, rechecks []func()) {
	for {
		changed := s.cfg.Tracer.Faults.Changed()
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
		for _, recheck := range rechecks {
			recheck()
		}
	}
}

// watchNodeFaults keeps the nodes in step with kubelet:fail:node-not-ready
// faults until ctx ends: a node in such a fault's scope (a node scope, or
// every node) reports Ready=False, and kube-controller-manager's node
// lifecycle controller taints it node.kubernetes.io/not-ready, as it would
// any node whose kubelet says so; removing the fault makes it Ready again.
func (s *Set) watchNodeFaults(ctx context.Context) {
	for {
		changed := s.cfg.Tracer.Faults.Changed()
		s.SyncFaults()
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}

// SyncFaults brings each kubelet's readiness in line with the active
// node-not-ready faults once (the watcher does so on every change) and
// returns, for every node, whether it should now be NotReady.
func (s *Set) SyncFaults() map[string]bool {
	want := map[string]bool{}
	if s.cfg.Tracer == nil {
		return want
	}
	faults := s.cfg.Tracer.Faults.List()
	for _, h := range s.hooks {
		down := notReady(faults, h.NodeName())
		if h.NotReady() != down {
			h.SetNotReady(down)
		}
		want[h.NodeName()] = down
	}
	return want
}

// notReady reports whether faults take node down: a kubelet fault of
// variant node-not-ready other than a delay (fail, hang, flake), scoped to
// the node or to every node; a pod scope takes no node down.
func notReady(faults []stages.Fault, node string) bool {
	for _, f := range faults {
		if f.Stage == stages.Kubelet && f.Variant == NodeNotReady && f.Kind != stages.Delay &&
			f.Scope.Pod == "" && (f.Scope.Node == "" || f.Scope.Node == node) {
			return true
		}
	}
	return false
}
