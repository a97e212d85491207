package outcome

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kubectl/pkg/polymorphichelpers"
	jobutil "k8s.io/kubernetes/pkg/controller/job/util"
)

// The kinds a run waits for.
var (
	podKind         = schema.GroupKind{Kind: "Pod"}
	deploymentKind  = schema.GroupKind{Group: appsv1.GroupName, Kind: "Deployment"}
	statefulSetKind = schema.GroupKind{Group: appsv1.GroupName, Kind: "StatefulSet"}
	daemonSetKind   = schema.GroupKind{Group: appsv1.GroupName, Kind: "DaemonSet"}
	replicaSetKind  = schema.GroupKind{Group: appsv1.GroupName, Kind: "ReplicaSet"}
	jobKind         = schema.GroupKind{Group: batchv1.GroupName, Kind: "Job"}
)

// Watched reports whether a run waits for objects of kind gk: Pods,
// Deployments, StatefulSets, DaemonSets, ReplicaSets and Jobs. Other kinds
// (Services, ConfigMaps, ...) are done once applied.
func Watched(gk schema.GroupKind) bool {
	switch gk {
	case podKind, deploymentKind, statefulSetKind, daemonSetKind, replicaSetKind, jobKind:
		return true
	}
	return false
}

// Workload judges a live object of a watched kind as kubectl does, and says
// why: a Deployment, StatefulSet or DaemonSet by `kubectl rollout status`
// (a Deployment past its progress deadline has failed); a Job by `kubectl
// wait --for=condition=Complete` (condition Failed: failed); a ReplicaSet
// once its ready replicas are its spec's; a Pod by Pod. The pods of a
// workload are not looked at here: Tracker.Judge does that.
func Workload(u *unstructured.Unstructured) (State, string) {
	gk := u.GroupVersionKind().GroupKind()
	if gk == podKind {
		p := &corev1.Pod{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
			return Failed, fmt.Sprintf("%s: %v", name(u), err)
		}
		return Pod(p)
	}
	obj, err := typed(u)
	if err != nil {
		return Failed, fmt.Sprintf("%s: %v", name(u), err)
	}
	switch o := obj.(type) {
	case *batchv1.Job:
		return judgeJob(o)
	case *appsv1.ReplicaSet:
		return judgeReplicaSet(o)
	}
	return rollout(u, obj)
}

// rollout judges a Deployment, StatefulSet or DaemonSet by kubectl's status
// viewers. Those refuse an OnDelete update strategy (kubectl rollout status
// has no answer there); such an object is done once every pod it wants is
// ready, which is what the viewers check first.
func rollout(u *unstructured.Unstructured, obj runtime.Object) (State, string) {
	viewer, err := polymorphichelpers.StatusViewerFor(u.GroupVersionKind().GroupKind())
	if err != nil {
		return Failed, fmt.Sprintf("%s: %v", name(u), err)
	}
	msg, done, err := viewer.Status(u, 0)
	msg = strings.TrimSpace(msg)
	switch {
	case err != nil && done:
		return onDelete(obj)
	case err != nil:
		return Failed, fmt.Sprintf("%s: %v", name(u), err)
	case done:
		return Done, msg
	}
	return Pending, msg
}

// onDelete judges a StatefulSet or DaemonSet whose pods are replaced only
// when deleted.
func onDelete(obj runtime.Object) (State, string) {
	switch o := obj.(type) {
	case *appsv1.StatefulSet:
		return ready(o.Generation, o.Status.ObservedGeneration, o.Status.ReadyReplicas, replicas(o.Spec.Replicas), "statefulset", o.Name)
	case *appsv1.DaemonSet:
		return ready(o.Generation, o.Status.ObservedGeneration, o.Status.NumberAvailable, o.Status.DesiredNumberScheduled, "daemon set", o.Name)
	}
	return Failed, fmt.Sprintf("no judgement for %T", obj)
}

// judgeReplicaSet: done once its ready replicas are the replicas its spec asks for.
func judgeReplicaSet(rs *appsv1.ReplicaSet) (State, string) {
	return ready(rs.Generation, rs.Status.ObservedGeneration, rs.Status.ReadyReplicas, replicas(rs.Spec.Replicas), "replica set", rs.Name)
}

// ready: done once the controller has seen the spec and have pods of want
// are ready.
func ready(generation, observed int64, have, want int32, kind, name string) (State, string) {
	switch {
	case observed < generation:
		return Pending, fmt.Sprintf("Waiting for %s spec update to be observed...", kind)
	case have < want:
		return Pending, fmt.Sprintf("Waiting for %s %q: %d of %d pods ready...", kind, name, have, want)
	}
	return Done, fmt.Sprintf("%s %q: %d pods ready", kind, name, have)
}

// judgeJob: done once condition Complete is True, failed once Failed is.
func judgeJob(j *batchv1.Job) (State, string) {
	finished, cond := jobutil.FinishedCondition(j)
	switch {
	case finished && cond == batchv1.JobComplete:
		return Done, fmt.Sprintf("job %q complete", j.Name)
	case finished:
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobFailed {
				return Failed, fmt.Sprintf("job %s/%s: %s: %s", j.Namespace, j.Name, c.Reason, c.Message)
			}
		}
	}
	if j.Spec.Completions != nil {
		return Pending, fmt.Sprintf("Waiting for job %q to complete: %d of %d succeeded...", j.Name, j.Status.Succeeded, *j.Spec.Completions)
	}
	return Pending, fmt.Sprintf("Waiting for job %q to complete: %d succeeded...", j.Name, j.Status.Succeeded)
}

// replicas is a spec's replicas, 1 when unset (as the API server defaults it).
func replicas(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

// typed converts a live object to its Go type.
func typed(u *unstructured.Unstructured) (runtime.Object, error) {
	obj, err := scheme.Scheme.New(u.GroupVersionKind())
	if err != nil {
		return nil, err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// podsOf returns the pods of pods that u owns: u itself for a Pod, else
// those its selector matches in its namespace (as kubectl logs finds them).
func podsOf(u *unstructured.Unstructured, pods []corev1.Pod) ([]*corev1.Pod, error) {
	if u.GroupVersionKind().GroupKind() == podKind {
		p := &corev1.Pod{}
		return []*corev1.Pod{p}, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p)
	}
	obj, err := typed(u)
	if err != nil {
		return nil, err
	}
	ns, sel, err := polymorphichelpers.SelectorsForObject(obj)
	if err != nil {
		return nil, err
	}
	var out []*corev1.Pod
	for i := range pods {
		if p := &pods[i]; p.Namespace == ns && sel.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	return out, nil
}

// name renders u as `statefulset default/web`.
func name(u *unstructured.Unstructured) string {
	return strings.ToLower(u.GetKind()) + " " + u.GetNamespace() + "/" + u.GetName()
}
