package nodename

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/engine/scheduler/framework"
)

func TestFilter(t *testing.T) {
	tests := []struct{ podNode, want string }{
		{"", ""},
		{"n1", ""},
		{"n2", "node(s) didn't match the requested node name"},
	}
	ni := framework.NewNodeInfo(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	for _, tt := range tests {
		st := Plugin{}.Filter(context.Background(), nil, &v1.Pod{Spec: v1.PodSpec{NodeName: tt.podNode}}, ni)
		if st.Message() != tt.want {
			t.Errorf("nodeName %q: got %q, want %q", tt.podNode, st.Message(), tt.want)
		}
	}
}
