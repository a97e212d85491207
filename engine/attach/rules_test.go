package attach

import (
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/stages"
)

func TestEventItems(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	pod := v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-1", UID: "u1"}
	ctr := pod
	ctr.FieldPath = "spec.containers{web}"
	for _, tt := range []struct {
		name    string
		ref     v1.ObjectReference
		reason  string
		msg     string
		count   int32
		stage   stages.ID
		status  stages.Status
		comp    string
		kind    string
		podName string
		dur     float64
	}{
		{"scheduled", pod, "Scheduled", "Successfully assigned default/web-1 to node-1", 1, stages.Bind, stages.Succeeded, "default-scheduler", "Pod", "web-1", 0},
		{"failed scheduling", pod, "FailedScheduling", "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.", 4, stages.Schedule, stages.Retrying, "default-scheduler", "Pod", "web-1", 0},
		{"sandbox", pod, "FailedCreatePodSandBox", "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to reserve sandbox name", 1, stages.Sandbox, stages.Retrying, "kubelet", "Pod", "web-1", 0},
		{"cni", pod, "FailedCreatePodSandBox", `Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox "abc": plugin type="bridge" failed`, 2, stages.CNI, stages.Retrying, "kubelet", "Pod", "web-1", 0},
		{"pulling", ctr, "Pulling", `Pulling image "nginx:1.27"`, 1, stages.Pull, stages.Started, "kubelet", "Pod", "web-1", 0},
		{"pulled", ctr, "Pulled", `Successfully pulled image "nginx:1.27" in 1.532s (1.532s including waiting). Image size: 100 bytes.`, 1, stages.Pull, stages.Succeeded, "kubelet", "Pod", "web-1", 1532},
		{"pull failed", ctr, "Failed", `Failed to pull image "nginx:nope": not found`, 1, stages.Pull, stages.Retrying, "kubelet", "Pod", "web-1", 0},
		{"err image pull", ctr, "Failed", "Error: ErrImagePull", 1, stages.Pull, stages.Retrying, "kubelet", "Pod", "web-1", 0},
		{"pull backoff", ctr, "BackOff", `Back-off pulling image "nginx:nope"`, 3, stages.Pull, stages.Retrying, "kubelet", "Pod", "web-1", 0},
		{"create error", ctr, "Failed", `Error: configmap "x" not found`, 1, stages.Create, stages.Retrying, "kubelet", "Pod", "web-1", 0},
		{"start error", ctr, "Failed", `Error: failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: "x": executable file not found in $PATH: unknown`, 2, stages.Start, stages.Retrying, "kubelet", "Pod", "web-1", 0},
		{"created", ctr, "Created", "Created container: web", 1, stages.Create, stages.Succeeded, "kubelet", "Pod", "web-1", 0},
		{"started", ctr, "Started", "Started container web", 1, stages.Start, stages.Succeeded, "kubelet", "Pod", "web-1", 0},
		{"crash loop", ctr, "BackOff", "Back-off restarting failed container web in pod web-1_default(u1)", 5, stages.Start, stages.Retrying, "kubelet", "Pod", "web-1", 0},
		{"hook", ctr, "FailedPostStartHook", "PostStartHook failed", 1, stages.Hooks, stages.Failed, "kubelet", "Pod", "web-1", 0},
		{"unhealthy", ctr, "Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 500", 2, stages.Ready, stages.Retrying, "kubelet", "Pod", "web-1", 0},
		{"rs failed create", v1.ObjectReference{Kind: "ReplicaSet", Namespace: "default", Name: "web-abc"}, "FailedCreate", `pods "web-abc-x" is forbidden: exceeded quota: q`, 1, stages.Reconcile, stages.Retrying, "replicaset-controller", "ReplicaSet", "web-abc", 0},
		{"deploy scaled", v1.ObjectReference{Kind: "Deployment", Namespace: "default", Name: "web"}, "ScalingReplicaSet", "Scaled up replica set web-abc from 0 to 3", 1, stages.Reconcile, stages.Succeeded, "deployment-controller", "ReplicaSet", "web-abc", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ev := &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1"}, InvolvedObject: tt.ref, Reason: tt.reason,
				Message: tt.msg, Count: tt.count, LastTimestamp: at, Source: v1.EventSource{Component: "x", Host: "node-1"}}
			items := eventItems(ev)
			if len(items) != 1 {
				t.Fatalf("%d items, want 1", len(items))
			}
			e := items[0].ev
			if e.Stage != tt.stage || e.Status != tt.status || e.Component != tt.comp || e.Kind != tt.kind || e.Pod != tt.podName {
				t.Errorf("got %s %s %s %s/%s, want %s %s %s %s/%s", e.Stage, e.Status, e.Component, e.Kind, e.Pod,
					tt.stage, tt.status, tt.comp, tt.kind, tt.podName)
			}
			if e.Message != tt.msg || e.Reason != tt.reason || !e.Time.Equal(at.Time) || e.DurationMs != tt.dur {
				t.Errorf("got %q %q at %s %vms", e.Reason, e.Message, e.Time, e.DurationMs)
			}
			if tt.ref.FieldPath != "" && e.Container != "web" {
				t.Errorf("container %q, want web", e.Container)
			}
			if tt.status == stages.Retrying && e.Attempt != int(tt.count) {
				t.Errorf("attempt %d, want the Event's count %d", e.Attempt, tt.count)
			}
		})
	}
}

// TestRestartsAreNewAttempts: the third Started of a crash-looping
// container is its third instance, the same fact the status gives when
// restartCount is 2, and distinct from the first.
func TestRestartsAreNewAttempts(t *testing.T) {
	ref := v1.ObjectReference{Kind: "Pod", Namespace: "d", Name: "p", UID: "u", FieldPath: "spec.containers{c}"}
	at := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 30, 0, time.UTC))
	started := func(n int32) item {
		return eventItems(&v1.Event{InvolvedObject: ref, Reason: "Started", Count: n, LastTimestamp: at})[0]
	}
	first, third := started(1), started(3)
	if first.key == third.key || third.ev.Attempt != 3 || first.ev.Attempt != 0 {
		t.Fatalf("first %q (attempt %d), third %q (attempt %d)", first.key, first.ev.Attempt, third.key, third.ev.Attempt)
	}
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "d", UID: "u", CreationTimestamp: at},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}},
		Status: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "c", RestartCount: 2,
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: at}}}}}}
	var keys []string
	for _, it := range podItems(p) {
		if it.ev.Stage == stages.Start {
			keys = append(keys, it.key)
		}
	}
	if len(keys) != 1 || keys[0] != third.key {
		t.Fatalf("status keys %v, want [%s]", keys, third.key)
	}
}

func TestEventItemsIgnoresOtherReasons(t *testing.T) {
	ev := &v1.Event{InvolvedObject: v1.ObjectReference{Kind: "Node", Name: "node-1"}, Reason: "NodeReady"}
	if got := eventItems(ev); len(got) != 0 {
		t.Fatalf("node event gave %v", got)
	}
}

func TestPodItemsFromStatus(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ts := func(s int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(s) * time.Second)) }
	ctrl := true
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default", UID: "u1", CreationTimestamp: ts(0),
		ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate}},
		OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web-abc", Controller: &ctrl}}},
		Spec: v1.PodSpec{NodeName: "node-1", Containers: []v1.Container{{Name: "web"}}},
		Status: v1.PodStatus{StartTime: &metav1.Time{Time: ts(2).Time},
			Conditions: []v1.PodCondition{
				{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: ts(1)},
				{Type: v1.PodReadyToStartContainers, Status: v1.ConditionTrue, LastTransitionTime: ts(3)},
				{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: ts(5)}},
			ContainerStatuses: []v1.ContainerStatus{{Name: "web", Ready: true,
				State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: ts(4)}}}}}}
	var got []string
	for _, it := range podItems(p) {
		got = append(got, string(it.ev.Stage)+"@"+itoa(int(it.ev.Time.Sub(t0)/time.Second)))
	}
	want := "persist@0 reconcile@0 schedule@1 bind@1 kubelet@2 sandbox@3 cni@3 pull@4 create@4 start@4 hooks@4 ready@5"
	if strings.Join(got, " ") != want {
		t.Errorf("got  %s\nwant %s", strings.Join(got, " "), want)
	}
	for _, it := range podItems(p) {
		switch it.ev.Stage {
		case stages.Persist:
			if it.ev.UserAgent != "kube-controller-manager" {
				t.Errorf("persist user agent %q, want the field manager", it.ev.UserAgent)
			}
		case stages.Reconcile:
			if it.ev.Message != "Created pod: web-1" || it.ev.Component != "replicaset-controller" {
				t.Errorf("reconcile %q by %s", it.ev.Message, it.ev.Component)
			}
		case stages.Bind:
			if it.ev.Message != "Successfully assigned default/web-1 to node-1" {
				t.Errorf("bind message %q", it.ev.Message)
			}
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestAuditEvents(t *testing.T) {
	line := func(code int, decision, extra string) string {
		return `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"a1","stage":"ResponseComplete",` +
			`"requestURI":"/api/v1/namespaces/default/pods","verb":"create","user":{"username":"system:serviceaccount:kube-system:replicaset-controller"},` +
			`"userAgent":"kube-controller-manager/v1.36.3","objectRef":{"resource":"pods","namespace":"default","apiVersion":"v1"` + extra + `},` +
			`"responseStatus":{"metadata":{},"code":` + itoa(code) + `,"message":"m","reason":"Forbidden"},` +
			`"responseObject":{"kind":"Pod","metadata":{"name":"web-abc-x","uid":"u9"}},` +
			`"requestReceivedTimestamp":"2026-01-02T03:04:05.100000Z","stageTimestamp":"2026-01-02T03:04:05.112500Z",` +
			`"annotations":{"authorization.k8s.io/decision":"` + decision + `","authorization.k8s.io/reason":"RBAC: allowed"}}`
	}
	for _, tt := range []struct {
		name, line, want string
	}{
		{"created", line(201, "allow", ""), "authn:succeeded authz:succeeded admission:succeeded"},
		{"forbidden by rbac", line(403, "forbid", ""), "authn:succeeded authz:failed"},
		{"quota", line(403, "allow", ""), "authn:succeeded authz:succeeded admission:failed"},
		{"unauthorized", line(401, "", ""), "authn:failed"},
		{"subresource ignored", line(201, "allow", `,"subresource":"binding"`), ""},
		{"other resource", strings.Replace(line(201, "allow", ""), `"resource":"pods"`, `"resource":"configmaps"`, 1), ""},
		{"request received only", strings.Replace(line(201, "allow", ""), "ResponseComplete", "RequestReceived", 1), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			evs, err := AuditEvents([]byte(tt.line))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range evs {
				got = append(got, string(e.Stage)+":"+string(e.Status))
				if e.Pod != "web-abc-x" || e.UID != "u9" || e.User != "system:serviceaccount:kube-system:replicaset-controller" || e.Verb != "create" {
					t.Errorf("event about %s/%s by %s (%s)", e.Pod, e.UID, e.User, e.Verb)
				}
				if e.DurationMs != 12.5 {
					t.Errorf("duration %vms, want 12.5 (audit timestamps have microseconds)", e.DurationMs)
				}
			}
			if strings.Join(got, " ") != tt.want {
				t.Errorf("got %q, want %q", strings.Join(got, " "), tt.want)
			}
		})
	}
	if _, err := AuditEvents([]byte("{oops")); err == nil {
		t.Error("malformed line accepted")
	}
}
