package framework

import "testing"

// Cases from kube-scheduler 1.36.3 pkg/scheduler/framework/types_test.go (TestFitError_Error).
func TestFitErrorMessage(t *testing.T) {
	u := func(msg string) *Status { return NewStatus(Unschedulable, msg) }
	tests := []struct {
		name string
		n    int
		d    Diagnosis
		want string
	}{
		{"prefilter", 3, Diagnosis{PreFilterMsg: "Node(s) failed PreFilter plugin FalsePreFilter",
			NodeToStatus: map[string]*Status{"node1": u("Node(s) failed PreFilter plugin FalsePreFilter")}},
			"0/3 nodes are available: Node(s) failed PreFilter plugin FalsePreFilter."},
		{"prefilter and postfilter", 3, Diagnosis{PreFilterMsg: "Node(s) failed PreFilter plugin FalsePreFilter",
			PostFilterMsg: "Error running PostFilter plugin FailedPostFilter"},
			"0/3 nodes are available: Node(s) failed PreFilter plugin FalsePreFilter. Error running PostFilter plugin FailedPostFilter"},
		{"one filter", 3, Diagnosis{NodeToStatus: map[string]*Status{
			"node1": u("Node(s) failed Filter plugin FalseFilter-1"), "node2": u("Node(s) failed Filter plugin FalseFilter-1"), "node3": u("Node(s) failed Filter plugin FalseFilter-1")}},
			"0/3 nodes are available: 3 Node(s) failed Filter plugin FalseFilter-1."},
		{"two filters sorted", 3, Diagnosis{NodeToStatus: map[string]*Status{
			"node1": u("Node(s) failed Filter plugin FalseFilter-1"), "node2": u("Node(s) failed Filter plugin FalseFilter-1"), "node3": u("Node(s) failed Filter plugin FalseFilter-2")},
			PostFilterMsg: "Error running PostFilter plugin FailedPostFilter"},
			"0/3 nodes are available: 1 Node(s) failed Filter plugin FalseFilter-2, 2 Node(s) failed Filter plugin FalseFilter-1. Error running PostFilter plugin FailedPostFilter"},
		{"several reasons per node", 2, Diagnosis{NodeToStatus: map[string]*Status{
			"a": NewStatus(Unschedulable, "Insufficient cpu", "Insufficient memory"), "b": u("Insufficient cpu")}},
			"0/2 nodes are available: 1 Insufficient memory, 2 Insufficient cpu."},
		{"absent nodes", 3, Diagnosis{NodeToStatus: map[string]*Status{"a": NewStatus(UnschedulableAndUnresolvable, "Insufficient cpu")},
			AbsentNodesStatus: NewStatus(UnschedulableAndUnresolvable, "Preemption is not helpful for scheduling")},
			"0/3 nodes are available: 1 Insufficient cpu, 2 Preemption is not helpful for scheduling."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := (&FitError{NumAllNodes: tt.n, Diagnosis: tt.d}).Error()
			if got != tt.want {
				t.Errorf("Error() =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestStatusNilIsSuccess(t *testing.T) {
	var s *Status
	if !s.IsSuccess() || s.IsRejected() || s.Message() != "" || s.AsError() != nil {
		t.Fatalf("nil status should be success")
	}
	r := NewStatus(UnschedulableAndUnresolvable, "a", "b").WithPlugin("P")
	if !r.IsRejected() || r.Message() != "a, b" || r.Plugin() != "P" || r.AsError() == nil {
		t.Fatalf("rejected status: %+v", r)
	}
}
