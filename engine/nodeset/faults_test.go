package nodeset

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"

	crihooks "github.com/podtrace/podtrace/engine/hooks/cri"
	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

func TestNotReady(t *testing.T) {
	notReadyOn := func(kind stages.FaultKind, scope stages.Scope) stages.Fault {
		return stages.Fault{Stage: stages.Kubelet, Kind: kind, Variant: NodeNotReady, Scope: scope}
	}
	for _, tt := range []struct {
		name   string
		faults []stages.Fault
		want   bool
	}{
		{"no fault", nil, false},
		{"every node", []stages.Fault{notReadyOn(stages.Fail, stages.Scope{})}, true},
		{"this node", []stages.Fault{notReadyOn(stages.Fail, stages.Scope{Node: "node-1"})}, true},
		{"a hang", []stages.Fault{notReadyOn(stages.Hang, stages.Scope{})}, true},
		{"another node", []stages.Fault{notReadyOn(stages.Fail, stages.Scope{Node: "node-2"})}, false},
		{"one pod", []stages.Fault{notReadyOn(stages.Fail, stages.Scope{Pod: "default/web"})}, false},
		{"a delay", []stages.Fault{notReadyOn(stages.Delay, stages.Scope{})}, false},
		{"another variant", []stages.Fault{{Stage: stages.Kubelet, Kind: stages.Fail}}, false},
		{"another stage", []stages.Fault{{Stage: stages.Pull, Kind: stages.Fail, Variant: NodeNotReady}}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := notReady(tt.faults, "node-1"); got != tt.want {
				t.Errorf("notReady(%v, node-1) = %v, want %v", tt.faults, got, tt.want)
			}
		})
	}
}

// TestWatchNodeFaults adds and removes a node-not-ready fault scoped to
// node-2 and expects that node's interposer, and only it, to report
// NotReady while the fault is active.
func TestWatchNodeFaults(t *testing.T) {
	tr := trace.New(clock.RealClock{}, trace.NewHub())
	s := &Set{cfg: Config{Tracer: tr}, hooks: []*crihooks.Hooks{
		crihooks.New(tr, "node-1"), crihooks.New(tr, "node-2")}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.watchFaults(ctx)
	down := func() map[string]bool {
		return map[string]bool{"node-1": s.hooks[0].NotReady(), "node-2": s.hooks[1].NotReady()}
	}
	waitDown := func(want map[string]bool) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			got := down()
			return got["node-1"] == want["node-1"] && got["node-2"] == want["node-2"], nil
		})
		if err != nil {
			t.Fatalf("NotReady %v, want %v", down(), want)
		}
	}
	f := tr.Faults.Add(stages.Fault{Stage: stages.Kubelet, Kind: stages.Fail, Variant: NodeNotReady, Scope: stages.Scope{Node: "node-2"}})
	waitDown(map[string]bool{"node-2": true})
	if got := s.SyncFaults(); !got["node-2"] || got["node-1"] || len(got) != 2 {
		t.Errorf("SyncFaults() = %v, want node-2 down and node-1 up", got)
	}
	tr.Faults.Remove(f.ID)
	waitDown(map[string]bool{})
}

// TestUntracedSetFollowsNoFaults: without a Tracer there are no
// interposers, and SyncFaults says nothing.
func TestUntracedSetFollowsNoFaults(t *testing.T) {
	s := &Set{}
	s.watchFaults(context.Background())
	if got := s.SyncFaults(); len(got) != 0 {
		t.Errorf("SyncFaults() = %v, want nothing", got)
	}
}
