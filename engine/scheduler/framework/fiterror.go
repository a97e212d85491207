package framework

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// NoNodeAvailableMsg starts every FitError message.
const NoNodeAvailableMsg = "0/%v nodes are available"

// Diagnosis records why each node was rejected in one attempt.
type Diagnosis struct {
	// NodeToStatus holds the rejecting status of each node that was evaluated.
	NodeToStatus map[string]*Status
	// AbsentNodesStatus, when set, applies to every node missing from NodeToStatus.
	AbsentNodesStatus *Status
	// PreFilterMsg is the message of a rejecting PreFilter plugin.
	PreFilterMsg string
	// PostFilterMsg is the message of the PostFilter (preemption) plugins.
	PostFilterMsg string
	// UnschedulablePlugins holds the plugins that rejected a node.
	UnschedulablePlugins map[string]bool
}

// NodesWithCode returns the nodes among all whose status has code, absent
// nodes counting as AbsentNodesStatus.
func (d *Diagnosis) NodesWithCode(all []*NodeInfo, code Code) []*NodeInfo {
	var out []*NodeInfo
	for _, ni := range all {
		s, ok := d.NodeToStatus[ni.Node().Name]
		if !ok {
			s = d.AbsentNodesStatus
			if s == nil {
				continue
			}
		}
		if s.Code() == code {
			out = append(out, ni)
		}
	}
	return out
}

// FitError is the error of an attempt in which no node fit the pod.
type FitError struct {
	Pod         *v1.Pod
	NumAllNodes int
	Diagnosis   Diagnosis
}

// Error renders the message kube-scheduler 1.36 puts in FailedScheduling
// events and the PodScheduled condition:
// "0/X nodes are available: <PreFilterMsg>. <reason histogram>. <PostFilterMsg>".
func (f *FitError) Error() string {
	msg := fmt.Sprintf(NoNodeAvailableMsg+":", f.NumAllNodes)
	if f.Diagnosis.PreFilterMsg != "" {
		msg += fmt.Sprintf(" %v.", f.Diagnosis.PreFilterMsg)
	} else {
		if h := ReasonHistogram(f.NumAllNodes, &f.Diagnosis); h != "" {
			msg += fmt.Sprintf(" %v.", h)
		}
	}
	if f.Diagnosis.PostFilterMsg != "" {
		msg += " " + f.Diagnosis.PostFilterMsg
	}
	return msg
}

// ReasonHistogram counts each reason over the nodes ("3 Insufficient cpu,
// 1 node(s) had untolerated taint(s)"), sorted as strings like upstream.
func ReasonHistogram(numAllNodes int, d *Diagnosis) string {
	reasons := map[string]int{}
	for _, s := range d.NodeToStatus {
		for _, r := range s.Reasons() {
			reasons[r]++
		}
	}
	if absent := numAllNodes - len(d.NodeToStatus); absent > 0 && d.AbsentNodesStatus != nil {
		for _, r := range d.AbsentNodesStatus.Reasons() {
			reasons[r] += absent
		}
	}
	out := make([]string, 0, len(reasons))
	for r, n := range reasons {
		out = append(out, fmt.Sprintf("%v %v", n, r))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
