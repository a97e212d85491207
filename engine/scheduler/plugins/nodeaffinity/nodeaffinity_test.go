package nodeaffinity

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/engine/scheduler/framework"
)

func requiredAffinity(terms ...v1.NodeSelectorTerm) *v1.Affinity {
	return &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: terms}}}
}

func expr(key string, op v1.NodeSelectorOperator, values ...string) v1.NodeSelectorTerm {
	return v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}
}

func TestFilter(t *testing.T) {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"disktype": "ssd", "cores": "8"}}}
	tests := []struct {
		name     string
		selector map[string]string
		affinity *v1.Affinity
		fits     bool
	}{
		{"nothing", nil, nil, true},
		{"selector matches", map[string]string{"disktype": "ssd"}, nil, true},
		{"selector does not match", map[string]string{"disktype": "hdd"}, nil, false},
		{"In", nil, requiredAffinity(expr("disktype", v1.NodeSelectorOpIn, "ssd", "nvme")), true},
		{"NotIn", nil, requiredAffinity(expr("disktype", v1.NodeSelectorOpNotIn, "ssd")), false},
		{"Exists", nil, requiredAffinity(expr("disktype", v1.NodeSelectorOpExists)), true},
		{"DoesNotExist", nil, requiredAffinity(expr("gpu", v1.NodeSelectorOpDoesNotExist)), true},
		{"Gt", nil, requiredAffinity(expr("cores", v1.NodeSelectorOpGt, "4")), true},
		{"Lt", nil, requiredAffinity(expr("cores", v1.NodeSelectorOpLt, "4")), false},
		{"terms are ORed", nil, requiredAffinity(expr("gpu", v1.NodeSelectorOpExists), expr("disktype", v1.NodeSelectorOpIn, "ssd")), true},
		{"matchFields name", nil, requiredAffinity(v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"n2"}}}}), false},
		{"selector and affinity both apply", map[string]string{"disktype": "hdd"}, requiredAffinity(expr("disktype", v1.NodeSelectorOpExists)), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{NodeSelector: tt.selector, Affinity: tt.affinity}}
			state := framework.NewCycleState()
			if _, pre := (Plugin{}).PreFilter(context.Background(), state, pod); pre.IsSkip() {
				if !tt.fits {
					t.Fatal("skipped a pod with constraints")
				}
				return
			}
			st := Plugin{}.Filter(context.Background(), state, pod, framework.NewNodeInfo(node))
			if st.IsSuccess() != tt.fits {
				t.Fatalf("fits = %v, want %v", st.IsSuccess(), tt.fits)
			}
			if !tt.fits && (st.Message() != ErrReasonPod || st.Code() != framework.UnschedulableAndUnresolvable) {
				t.Errorf("got %v %q", st.Code(), st.Message())
			}
		})
	}
}

func TestScorePreferred(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{Affinity: &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{
			{Weight: 10, Preference: expr("zone", v1.NodeSelectorOpIn, "a")},
			{Weight: 30, Preference: expr("disktype", v1.NodeSelectorOpIn, "ssd")},
		}}}}}
	labels := []map[string]string{{"zone": "a"}, {"zone": "a", "disktype": "ssd"}, {}}
	scores := make([]framework.NodeScore, len(labels))
	for i, l := range labels {
		scores[i].Score, _ = Plugin{}.Score(context.Background(), nil, pod, framework.NewNodeInfo(&v1.Node{ObjectMeta: metav1.ObjectMeta{Labels: l}}))
	}
	_ = Plugin{}.NormalizeScore(context.Background(), nil, pod, scores)
	if scores[0].Score != 25 || scores[1].Score != 100 || scores[2].Score != 0 {
		t.Errorf("scores %+v, want 25, 100, 0", scores)
	}
}

func TestPreFilterNodeNames(t *testing.T) {
	name := func(op v1.NodeSelectorOperator, values ...string) v1.NodeSelectorRequirement {
		return v1.NodeSelectorRequirement{Key: "metadata.name", Operator: op, Values: values}
	}
	tests := []struct {
		name  string
		terms []v1.NodeSelectorTerm
		want  []string // nil: all nodes
		msg   string
	}{
		{"labels only", []v1.NodeSelectorTerm{expr("a", v1.NodeSelectorOpExists)}, nil, ""},
		{"one name", []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{name(v1.NodeSelectorOpIn, "n1")}}}, []string{"n1"}, ""},
		{"ANDed fields intersect", []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{name(v1.NodeSelectorOpIn, "n1", "n2"), name(v1.NodeSelectorOpIn, "n2", "n3")}}}, []string{"n2"}, ""},
		{"ORed terms unite", []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{name(v1.NodeSelectorOpIn, "n1")}}, {MatchFields: []v1.NodeSelectorRequirement{name(v1.NodeSelectorOpIn, "n2")}}}, []string{"n1", "n2"}, ""},
		{"a term without names allows all", []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{name(v1.NodeSelectorOpIn, "n1")}}, expr("a", v1.NodeSelectorOpExists)}, nil, ""},
		{"conflict", []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{name(v1.NodeSelectorOpIn, "n1"), name(v1.NodeSelectorOpIn, "n2")}}}, nil, ErrReasonConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{Affinity: requiredAffinity(tt.terms...)}}
			r, st := Plugin{}.PreFilter(context.Background(), framework.NewCycleState(), pod)
			if st.Message() != tt.msg {
				t.Fatalf("status %q, want %q", st.Message(), tt.msg)
			}
			if tt.msg != "" {
				return
			}
			if tt.want == nil {
				if !r.AllNodes() {
					t.Fatalf("restricted to %v, want all nodes", r.NodeNames)
				}
				return
			}
			if r.AllNodes() || len(r.NodeNames) != len(tt.want) {
				t.Fatalf("got %+v, want %v", r, tt.want)
			}
			for _, n := range tt.want {
				if !r.NodeNames[n] {
					t.Errorf("missing %s in %v", n, r.NodeNames)
				}
			}
		})
	}
}
