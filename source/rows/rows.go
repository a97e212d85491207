// Package rows prints the objects a lane shows (Pods, ReplicaSets,
// Deployments, StatefulSets, DaemonSets, Jobs) as `kubectl get` prints them:
// the columns come from the object through kubectl's own table printers
// (k8s.io/kubernetes/pkg/printers/internalversion, the code the API server
// runs for kubectl's server-side tables), so the screen says what kubectl
// says at the same moment. Every source (the embedded cluster, attach, and
// through a recording replay) sends these rows beside its stage events.
package rows

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/apps"
	"k8s.io/kubernetes/pkg/apis/batch"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/printers"
	"k8s.io/kubernetes/pkg/printers/internalversion"

	// The conversions from the v1 objects informers hold to the internal
	// ones kubectl's printers read.
	_ "k8s.io/kubernetes/pkg/apis/apps/install"
	_ "k8s.io/kubernetes/pkg/apis/batch/install"
	_ "k8s.io/kubernetes/pkg/apis/core/install"

	"github.com/podtrace/podtrace/stages"
)

// generator is kubectl's table generator with every built-in printer.
var generator = printers.NewTableGenerator().With(internalversion.AddHandlers)

// Of returns obj's row as kubectl prints it, seen at now. It returns false
// for an object of a kind podtrace draws no lane for.
func Of(obj runtime.Object, now time.Time) (stages.Row, bool, error) {
	var (
		internal runtime.Object
		kind     string
		meta     *metav1.ObjectMeta
	)
	switch o := obj.(type) {
	case *corev1.Pod:
		internal, kind, meta = &api.Pod{}, stages.KindPod, &o.ObjectMeta
	case *appsv1.ReplicaSet:
		internal, kind, meta = &apps.ReplicaSet{}, stages.KindReplicaSet, &o.ObjectMeta
	case *appsv1.Deployment:
		internal, kind, meta = &apps.Deployment{}, stages.KindDeployment, &o.ObjectMeta
	case *appsv1.StatefulSet:
		internal, kind, meta = &apps.StatefulSet{}, stages.KindStatefulSet, &o.ObjectMeta
	case *appsv1.DaemonSet:
		internal, kind, meta = &apps.DaemonSet{}, stages.KindDaemonSet, &o.ObjectMeta
	case *batchv1.Job:
		internal, kind, meta = &batch.Job{}, stages.KindJob, &o.ObjectMeta
	default:
		return stages.Row{}, false, nil
	}
	if err := legacyscheme.Scheme.Convert(obj, internal, nil); err != nil {
		return stages.Row{}, false, fmt.Errorf("print %s %s/%s: %w", kind, meta.Namespace, meta.Name, err)
	}
	table, err := generator.GenerateTable(internal, printers.GenerateOptions{})
	if err != nil {
		return stages.Row{}, false, fmt.Errorf("print %s %s/%s: %w", kind, meta.Namespace, meta.Name, err)
	}
	if len(table.Rows) != 1 {
		return stages.Row{}, false, fmt.Errorf("print %s %s/%s: %d rows", kind, meta.Namespace, meta.Name, len(table.Rows))
	}
	cell := cells(table)
	r := stages.Row{Time: now, Kind: kind, Namespace: meta.Namespace, Name: meta.Name, UID: string(meta.UID),
		Created: meta.CreationTimestamp.Time, Done: []stages.ID{stages.Authn, stages.Authz, stages.Admission, stages.Persist}}
	if ref := metav1.GetControllerOfNoCopy(meta); ref != nil {
		r.Owner = ref.Kind + "/" + ref.Name
		r.Done = append(r.Done, stages.Reconcile)
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		r.Ready, r.Status, r.Restarts = cell("Ready"), cell("Status"), cell("Restarts")
		r.Node, r.Phase = o.Spec.NodeName, string(o.Status.Phase)
		if o.DeletionTimestamp != nil {
			r.Phase = "Terminating"
		}
		r.Done = append(r.Done, podDone(o)...)
	case *batchv1.Job:
		r.Ready, r.Status = cell("Completions"), cell("Status")
		r.Phase = progress(r.Status == "Complete")
	case *appsv1.ReplicaSet, *appsv1.DaemonSet:
		// kubectl prints DESIRED and READY apart; the lane reads them as one.
		r.Ready = cell("Ready") + "/" + cell("Desired")
		r.Phase = progress(cell("Ready") == cell("Desired"))
	default:
		r.Ready = cell("Ready")
		r.Phase = progress(readyOfDesired(r.Ready))
	}
	return r, true, nil
}

// cells returns a lookup of the table's first row by column name, each
// cell as kubectl prints it.
func cells(t *metav1.Table) func(column string) string {
	return func(column string) string {
		for i, c := range t.ColumnDefinitions {
			if c.Name == column && i < len(t.Rows[0].Cells) {
				return fmt.Sprint(t.Rows[0].Cells[i])
			}
		}
		return ""
	}
}

// progress is a workload's phase: Ready when it has what it wants.
func progress(done bool) string {
	if done {
		return "Ready"
	}
	return "Progressing"
}

// readyOfDesired reports whether a READY cell ("3/3") has every desired
// replica ready.
func readyOfDesired(ready string) bool {
	var r, d int
	if _, err := fmt.Sscanf(ready, "%d/%d", &r, &d); err != nil {
		return false
	}
	return r == d
}

// Deleted is the row of an object that left the API.
func Deleted(r stages.Row, now time.Time) stages.Row {
	r.Time, r.Deleted, r.Done = now, true, nil
	if r.Kind == stages.KindPod {
		r.Status, r.Phase = "Deleted", "Deleted"
	}
	return r
}
