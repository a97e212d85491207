package outcome

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
)

// live is obj as the dynamic client returns it.
func live(t *testing.T, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil {
		t.Fatal(err)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvks[0])
	return u
}

var (
	objMeta = metav1.ObjectMeta{Namespace: "default", Name: "web", Generation: 1}
	webSel  = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
)

func statefulSet(replicas, ready int32, observed int64) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{ObjectMeta: objMeta, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(replicas), Selector: webSel,
		UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](0)}}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: observed, Replicas: replicas, ReadyReplicas: ready, UpdatedReplicas: ready}}
}

func deployment(replicas, updated, available int32, progressing string) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: objMeta, Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: webSel},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: updated, UpdatedReplicas: updated, AvailableReplicas: available, ReadyReplicas: available}}
	if progressing != "" {
		d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: progressing}}
	}
	return d
}

func daemonSet(strategy appsv1.DaemonSetUpdateStrategyType, desired, updated, available int32) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{ObjectMeta: objMeta, Spec: appsv1.DaemonSetSpec{Selector: webSel, UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: strategy}},
		Status: appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: desired, UpdatedNumberScheduled: updated, NumberAvailable: available}}
}

func job(completions *int32, succeeded int32, conds ...batchv1.JobCondition) *batchv1.Job {
	return &batchv1.Job{ObjectMeta: objMeta, Spec: batchv1.JobSpec{Completions: completions, Selector: webSel},
		Status: batchv1.JobStatus{Succeeded: succeeded, Conditions: conds}}
}

func replicaSet(replicas, ready int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{ObjectMeta: objMeta, Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas), Selector: webSel},
		Status: appsv1.ReplicaSetStatus{ObservedGeneration: 1, Replicas: replicas, ReadyReplicas: ready}}
}

// TestWorkload judges objects as kubectl rollout status and kubectl wait
// --for=condition=Complete would.
func TestWorkload(t *testing.T) {
	onDeleteSts := statefulSet(2, 2, 1)
	onDeleteSts.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
	tests := []struct {
		name string
		obj  runtime.Object
		want State
		why  string
	}{
		{"statefulset not yet observed", statefulSet(2, 0, 0), Pending, "Waiting for statefulset spec update to be observed"},
		{"statefulset 1 of 2 ready", statefulSet(2, 1, 1), Pending, "Waiting for 1 pods to be ready"},
		{"statefulset all ready", statefulSet(2, 2, 1), Done, "partitioned roll out complete: 2 new pods"},
		{"statefulset OnDelete all ready", onDeleteSts, Done, "2 pods ready"},
		{"deployment updating", deployment(3, 1, 1, ""), Pending, "1 out of 3 new replicas have been updated"},
		{"deployment not available", deployment(3, 3, 2, ""), Pending, "2 of 3 updated replicas are available"},
		{"deployment rolled out", deployment(3, 3, 3, ""), Done, `deployment "web" successfully rolled out`},
		{"deployment past its deadline", deployment(3, 3, 0, "ProgressDeadlineExceeded"), Failed, `deployment "web" exceeded its progress deadline`},
		{"daemonset rolling", daemonSet(appsv1.RollingUpdateDaemonSetStrategyType, 3, 3, 1), Pending, "1 of 3 updated pods are available"},
		{"daemonset rolled out", daemonSet(appsv1.RollingUpdateDaemonSetStrategyType, 3, 3, 3), Done, "successfully rolled out"},
		{"daemonset OnDelete pending", daemonSet(appsv1.OnDeleteDaemonSetStrategyType, 3, 0, 2), Pending, "2 of 3 pods ready"},
		{"job running", job(ptr.To[int32](3), 1), Pending, "1 of 3 succeeded"},
		{"job SuccessCriteriaMet is not yet Complete", job(nil, 1, batchv1.JobCondition{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue}), Pending, "1 succeeded"},
		{"job complete", job(nil, 1, batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}), Done, "complete"},
		{"job failed", job(nil, 0, batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded",
			Message: "Job has reached the specified backoff limit"}), Failed, "default/web: BackoffLimitExceeded: Job has reached the specified backoff limit"},
		{"replicaset short", replicaSet(2, 1), Pending, "1 of 2 pods ready"},
		{"replicaset ready", replicaSet(2, 2), Done, "2 pods ready"},
		{"pod pending", &corev1.Pod{ObjectMeta: objMeta}, Pending, ""},
		{"pod succeeded", &corev1.Pod{ObjectMeta: objMeta, Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}, Done, "Succeeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := Workload(live(t, tt.obj))
			if got != tt.want || !strings.Contains(why, tt.why) {
				t.Errorf("Workload = %v %q, want %v containing %q", got, why, tt.want, tt.why)
			}
		})
	}
}

func pod(name string, phase corev1.PodPhase, ready bool, restarts int32, waiting string) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"app": "web"}},
		Status: corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{Name: "c", RestartCount: restarts}}}}
	if ready {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	if waiting != "" {
		p.Status.ContainerStatuses[0].State.Waiting = &corev1.ContainerStateWaiting{Reason: waiting, Message: "back-off 10s"}
	}
	return p
}

// TestTrackerJudgesWorkloadsAndTheirPods: a run is done when every target is
// done by its object and its pods have settled; a stuck pod fails its
// workload; a Job's failed pod is the Job's to judge.
func TestTrackerJudgesWorkloadsAndTheirPods(t *testing.T) {
	target := func(kind string, obj runtime.Object) Target {
		tg := Target{Kind: kind, Namespace: "default", Name: "web"}
		if obj != nil {
			tg.Live = live(t, obj)
		}
		return tg
	}
	other := pod("other", corev1.PodPending, false, 0, "ImagePullBackOff")
	other.Labels = map[string]string{"app": "other"}
	settled := 10 * time.Second
	tests := []struct {
		name    string
		targets []Target
		pods    []corev1.Pod
		at      time.Duration // since the tracker first saw the pods
		want    State         // of the run: Pending (not finished), Done, Failed
		why     string
	}{
		{"statefulset not created: no pods yet, not finished", []Target{target("StatefulSet", nil)}, nil, settled, Pending, "statefulset default/web: not created yet"},
		{"statefulset with no pods ready", []Target{target("StatefulSet", statefulSet(2, 0, 1))}, nil, settled, Pending, "Waiting for 2 pods to be ready"},
		{"statefulset ready and settled", []Target{target("StatefulSet", statefulSet(1, 1, 1))},
			[]corev1.Pod{pod("web-0", corev1.PodRunning, true, 0, "")}, settled, Done, ""},
		{"statefulset ready, pod not settled", []Target{target("StatefulSet", statefulSet(1, 1, 1))},
			[]corev1.Pod{pod("web-0", corev1.PodRunning, true, 0, "")}, time.Second, Pending, "pod default/web-0: Ready for less than 5s"},
		{"deployment with a crash-looping pod fails", []Target{target("Deployment", deployment(2, 2, 1, ""))},
			[]corev1.Pod{pod("web-a", corev1.PodRunning, true, 0, ""), pod("web-b", corev1.PodRunning, false, 3, "CrashLoopBackOff")}, settled, Failed,
			"default/web-b: container c: CrashLoopBackOff: back-off 10s"},
		{"a stuck pod another workload owns is not this one's", []Target{target("Deployment", deployment(1, 1, 1, ""))},
			[]corev1.Pod{pod("web-a", corev1.PodRunning, true, 0, ""), other}, settled, Done, ""},
		{"a job's failed pod is replaced, not a failure", []Target{target("Job", job(nil, 0))},
			[]corev1.Pod{pod("web-x", corev1.PodFailed, false, 0, "")}, settled, Pending, `Waiting for job "web" to complete`},
		{"every target must be done", []Target{target("Job", job(nil, 1, batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue})),
			target("ReplicaSet", replicaSet(2, 1))}, nil, settled, Pending, "replicaset default/web: Waiting for replica set"},
		{"bare pod stuck", []Target{target("Pod", ptr.To(pod("web", corev1.PodPending, false, 0, "ImagePullBackOff")))},
			nil, settled, Failed, "default/web: container c: ImagePullBackOff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := NewTracker(Settle)
			start := time.Unix(1000, 0)
			tr.Judge(tt.targets, tt.pods, start)
			s := tr.Judge(tt.targets, tt.pods, start.Add(tt.at))
			var got State
			var why string
			switch {
			case !s.Finished():
				got, why = Pending, strings.Join(s.Waiting, "; ")
			case s.Failed > 0:
				got, why = Failed, strings.Join(s.Reasons, "; ")
			default:
				got = Done
			}
			if got != tt.want || !strings.Contains(why, tt.why) {
				t.Errorf("run %v %q, want %v containing %q (%+v)", got, why, tt.want, tt.why, s)
			}
		})
	}
}
