package rows

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/podtrace/podtrace/stages"
)

// Watch registers informers on f for every kind a lane shows and calls
// emit with an object's row whenever it is added, changes or is deleted;
// want, when not nil, picks the rows to send (Target's, for one object).
// Start f afterwards. emit runs on the informers' goroutines and must not
// block for long.
func Watch(f informers.SharedInformerFactory, now func() time.Time, want func(stages.Row) bool, emit func(stages.Row)) error {
	send := func(obj any, deleted bool) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj, deleted = d.Obj, true
		}
		o, ok := obj.(runtime.Object)
		if !ok {
			return
		}
		r, ok, err := Of(o, now())
		if err != nil {
			klog.ErrorS(err, "print row")
			return
		}
		if !ok || (want != nil && !want(r)) {
			return
		}
		if deleted {
			r = Deleted(r, now())
		}
		emit(r)
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { send(obj, false) },
		UpdateFunc: func(old, obj any) { sendChanged(old, obj, send) },
		DeleteFunc: func(obj any) { send(obj, true) },
	}
	for _, inf := range []cache.SharedIndexInformer{
		f.Core().V1().Pods().Informer(),
		f.Apps().V1().ReplicaSets().Informer(),
		f.Apps().V1().Deployments().Informer(),
		f.Apps().V1().StatefulSets().Informer(),
		f.Apps().V1().DaemonSets().Informer(),
		f.Batch().V1().Jobs().Informer(),
	} {
		if _, err := inf.AddEventHandler(handler); err != nil {
			return fmt.Errorf("watch rows: %w", err)
		}
	}
	return nil
}

// sendChanged sends obj unless the informer's periodic resync brought the
// same version again.
func sendChanged(old, obj any, send func(any, bool)) {
	a, errA := meta.Accessor(old)
	b, errB := meta.Accessor(obj)
	if errA == nil && errB == nil && a.GetResourceVersion() == b.GetResourceVersion() {
		return
	}
	send(obj, false)
}

// Target picks the rows of one pod (kind Pod) or of one Deployment, its
// ReplicaSets and their pods (kind Deployment), as `attach pod/NAME` and
// `attach deploy/NAME` show them; kind "" picks every row. A Deployment's
// pods are known by their ReplicaSet's name, which the Deployment
// controller makes "<deployment>-<hash>".
func Target(kind, name string) func(stages.Row) bool {
	return func(r stages.Row) bool {
		switch kind {
		case "":
			return true
		case stages.KindPod:
			return r.Kind == stages.KindPod && r.Name == name
		case stages.KindDeployment:
			switch r.Kind {
			case stages.KindDeployment:
				return r.Name == name
			case stages.KindReplicaSet:
				return r.Owner == stages.KindDeployment+"/"+name
			case stages.KindPod:
				rs, ok := strings.CutPrefix(r.Owner, stages.KindReplicaSet+"/")
				return ok && strings.HasPrefix(rs, name+"-")
			}
		}
		return false
	}
}
