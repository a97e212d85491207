package sched

import (
	"errors"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodeaffinity"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodeports"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodeunschedulable"

	"github.com/podtrace/podtrace/stages"
)

// rejection is how an upstream filter plugin turns a node down: its name,
// its status code (Unschedulable when evicting pods could help, which decides
// the preemption sentence) and its reason.
type rejection struct {
	plugin string
	code   fwk.Code
	reason string
}

// rejections maps a schedule fault's variant (stages.Variants(Schedule)) to
// the verdict of the upstream plugin it stands for, with upstream's reasons.
var rejections = map[string]rejection{
	"cpu":           {names.NodeResourcesFit, fwk.Unschedulable, "Insufficient cpu"},
	"memory":        {names.NodeResourcesFit, fwk.Unschedulable, "Insufficient memory"},
	"pods":          {names.NodeResourcesFit, fwk.Unschedulable, "Too many pods"},
	"ports":         {names.NodePorts, fwk.Unschedulable, nodeports.ErrReason},
	"taint":         {names.TaintToleration, fwk.UnschedulableAndUnresolvable, "node(s) had untolerated taint(s)"},
	"selector":      {names.NodeAffinity, fwk.UnschedulableAndUnresolvable, nodeaffinity.ErrReasonPod},
	"unschedulable": {names.NodeUnschedulable, fwk.UnschedulableAndUnresolvable, nodeunschedulable.ErrReasonUnschedulable},
}

// rejectionFor returns the verdict a schedule fault gives every node; an
// unknown or empty variant is the stage's default (cpu).
func rejectionFor(f stages.Fault) rejection {
	if r, ok := rejections[f.Variant]; ok {
		return r
	}
	return rejections["cpu"]
}

// faultKey is the CycleState key of the attempt's schedule fault.
const faultKey fwk.StateKey = PluginName + "/fault"

// faultState is a schedule fault carried through one attempt.
type faultState struct {
	fault     stages.Fault
	rejection rejection
}

// Clone returns the state itself: it is never modified.
func (s *faultState) Clone() fwk.StateData { return s }

// faultOf returns the attempt's schedule fault, nil when there is none.
func faultOf(state fwk.CycleState) *faultState {
	d, err := state.Read(faultKey)
	if err != nil {
		return nil
	}
	fs, _ := d.(*faultState)
	return fs
}

// bindConflict is the error a bind fault produces: the apiserver's 409 for a
// binding that lost a race (stages.Variants(Bind) "conflict").
func bindConflict(pod *v1.Pod) error {
	return apierrors.NewConflict(schema.GroupResource{Resource: "pods/binding"}, pod.Name,
		errors.New("the object has been modified; please apply your changes to the latest version and try again"))
}
