package nodeset

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/podtrace/podtrace/engine/nodes"
)

func TestWaitReady(t *testing.T) {
	node := func(name string, ready v1.ConditionStatus, taints ...v1.Taint) runtime.Object {
		return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{Taints: taints},
			Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: ready}}}}
	}
	notReadyTaint := v1.Taint{Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectNoSchedule}
	untainted := func(n *v1.Node) bool { return len(n.Spec.Taints) == 0 }
	for _, tt := range []struct {
		name    string
		objects []runtime.Object
		also    func(*v1.Node) bool
		wantErr string // "" when every node is Ready
	}{
		{"both Ready", []runtime.Object{node("node-1", v1.ConditionTrue), node("node-2", v1.ConditionTrue)}, nil, ""},
		{"one NotReady", []runtime.Object{node("node-1", v1.ConditionTrue), node("node-2", v1.ConditionFalse)}, nil, "(1 of 2)"},
		{"one not registered", []runtime.Object{node("node-1", v1.ConditionTrue)}, nil, "(1 of 2)"},
		{"another cluster's node does not count", []runtime.Object{node("node-1", v1.ConditionTrue), node("other", v1.ConditionTrue)}, nil, "(1 of 2)"},
		{"Ready but still tainted", []runtime.Object{node("node-1", v1.ConditionTrue), node("node-2", v1.ConditionTrue, notReadyTaint)}, untainted, "(1 of 2)"},
		{"Ready and untainted", []runtime.Object{node("node-1", v1.ConditionTrue), node("node-2", v1.ConditionTrue)}, untainted, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &Set{cfg: Config{Nodes: nodes.Defaults(2)}}
			wait := 30 * time.Second // a Ready set answers at once
			if tt.wantErr != "" {
				wait = 300 * time.Millisecond
			}
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			err := s.WaitReady(ctx, fake.NewClientset(tt.objects...), tt.also)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("WaitReady: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("WaitReady: %v, want an error saying %q", err, tt.wantErr)
			}
		})
	}
}
