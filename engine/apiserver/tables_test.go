package apiserver

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
)

var tableNow = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(tableNow.Add(-d)) }

func running(ready bool, restarts int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: "app", Ready: ready, RestartCount: restarts,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
}

func waiting(reason string, restarts int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: "app", RestartCount: restarts,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
}

func testPod(mutate func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", CreationTimestamp: ago(5 * time.Minute)},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending}}
	mutate(p)
	return p
}

// TestPodRow checks READY, STATUS and RESTARTS as kubectl get pods prints them.
func TestPodRow(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	deleting := ago(time.Second)
	tests := []struct {
		name                    string
		pod                     *corev1.Pod
		ready, status, restarts string
		completed               bool
	}{
		{"unscheduled", testPod(func(p *corev1.Pod) {}), "0/1", "Pending", "0", false},
		{"creating", testPod(func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{waiting("ContainerCreating", 0)}
		}), "0/1", "ContainerCreating", "0", false},
		{"running and ready", testPod(func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.Status.ContainerStatuses = []corev1.ContainerStatus{running(true, 0)}
		}), "1/1", "Running", "0", false},
		{"crash loop with the last restart's age", testPod(func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			s := waiting("CrashLoopBackOff", 4)
			s.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", FinishedAt: ago(90 * time.Second)}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{s}
		}), "0/1", "CrashLoopBackOff", "4 (90s ago)", false},
		{"image pull back-off", testPod(func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{waiting("ImagePullBackOff", 0)}
		}), "0/1", "ImagePullBackOff", "0", false},
		{"init container running", testPod(func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init"}, {Name: "init2"}}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		}), "0/1", "Init:0/2", "0", false},
		{"init container pull error", testPod(func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init"}}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull"}}}}
		}), "0/1", "Init:ErrImagePull", "0", false},
		{"init container failed", testPod(func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init"}}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2}}}}
		}), "0/1", "Init:ExitCode:2", "0", false},
		{"sidecar counts in READY", testPod(func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: &always}}
			started := true
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "proxy", Ready: true, Started: &started,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{running(true, 0)}
		}), "2/2", "Running", "0", false},
		{"completed", testPod(func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodSucceeded
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{
				Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}}}
		}), "0/1", "Completed", "0", true},
		{"one container done, one running but not ready", testPod(func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "side"})
			p.Status.ContainerStatuses = []corev1.ContainerStatus{
				{Name: "app", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}},
				{Name: "side", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		}), "1/2", "NotReady", "0", false},
		{"OOMKilled", testPod(func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{
				Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}}}
		}), "0/1", "OOMKilled", "0", false},
		{"terminating", testPod(func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.DeletionTimestamp = &deleting
			p.Status.ContainerStatuses = []corev1.ContainerStatus{running(true, 0)}
		}), "1/1", "Terminating", "0", false},
		{"node lost", testPod(func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.Status.Reason = "NodeLost"
			p.DeletionTimestamp = &deleting
		}), "0/1", "Unknown", "0", false},
		{"scheduling gated", testPod(func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "SchedulingGated"}}
		}), "0/1", "SchedulingGated", "0", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cells, conditions := podRow(tc.pod, tableNow)
			got := fmt.Sprint(cells[:5])
			want := fmt.Sprint([]interface{}{"web", tc.ready, tc.status, tc.restarts, "5m"})
			if got != want {
				t.Errorf("cells = %s, want %s", got, want)
			}
			if (len(conditions) == 1 && conditions[0].Type == metav1.RowCompleted) != tc.completed {
				t.Errorf("row conditions %v, completed want %v", conditions, tc.completed)
			}
		})
	}
}

func TestPodRowWide(t *testing.T) {
	p := testPod(func(p *corev1.Pod) {
		p.Spec.NodeName = "node-2"
		p.Status.PodIPs = []corev1.PodIP{{IP: "10.244.2.7"}}
		p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "a"}, {ConditionType: "b"}}
		p.Status.Conditions = []corev1.PodCondition{{Type: "a", Status: corev1.ConditionTrue}}
	})
	cells, _ := podRow(p, tableNow)
	if got := fmt.Sprint(cells[5:]); got != "[10.244.2.7 node-2 <none> 1/2]" {
		t.Errorf("wide cells = %s", got)
	}
	cells, _ = podRow(testPod(func(*corev1.Pod) {}), tableNow)
	if got := fmt.Sprint(cells[5:]); got != "[<none> <none> <none> <none>]" {
		t.Errorf("wide cells of a new pod = %s", got)
	}
}

// TestPrinters checks each kind's columns and one row's cells.
func TestPrinters(t *testing.T) {
	three, holder := int32(3), "node-1"
	tests := []struct {
		kind    string
		obj     runtime.Object
		columns []string
		cells   []interface{}
	}{
		{"Deployment", &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", CreationTimestamp: ago(2 * time.Hour)},
			Spec: appsv1.DeploymentSpec{Replicas: &three, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "x:1"}, {Name: "b", Image: "y:2"}}}}},
			Status: appsv1.DeploymentStatus{ReadyReplicas: 2, UpdatedReplicas: 3, AvailableReplicas: 1}},
			[]string{"Name", "Ready", "Up-to-date", "Available", "Age", "Containers", "Images", "Selector"},
			[]interface{}{"web", "2/3", int64(3), int64(1), "120m", "a,b", "x:1,y:2", "app=web"}},
		{"ReplicaSet", &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1", CreationTimestamp: ago(3 * 24 * time.Hour)},
			Spec: appsv1.ReplicaSetSpec{Replicas: &three, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "x:1"}}}}},
			Status: appsv1.ReplicaSetStatus{Replicas: 2, ReadyReplicas: 1}},
			[]string{"Name", "Desired", "Current", "Ready", "Age", "Containers", "Images", "Selector"},
			[]interface{}{"web-1", int64(3), int64(2), int64(1), "3d", "a", "x:1", "app=web"}},
		{"Node", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", CreationTimestamp: ago(10 * time.Second),
			Labels: map[string]string{"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "worker"}},
			Spec: corev1.NodeSpec{Unschedulable: true},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}},
				Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}},
				NodeInfo:  corev1.NodeSystemInfo{KubeletVersion: "v1.36.3", OSImage: "sim", KernelVersion: "6.12", Architecture: "amd64"}}},
			[]string{"Name", "Status", "Roles", "Age", "Version", "Internal-IP", "External-IP", "OS-Image", "Kernel-Version", "Container-Runtime"},
			[]interface{}{"node-1", "NotReady,SchedulingDisabled", "control-plane,worker", "10s", "v1.36.3", "10.0.0.1", "<none>", "sim", "6.12 (amd64)", "<unknown>"}},
		{"Event", &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "web.1"}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web", FieldPath: "spec.containers{app}"},
			Reason: "BackOff", Type: "Warning", Message: " Back-off restarting failed container\n", Count: 7,
			FirstTimestamp: ago(10 * time.Minute), LastTimestamp: ago(30 * time.Second), Source: corev1.EventSource{Component: "kubelet", Host: "node-1"}},
			[]string{"Last Seen", "Type", "Reason", "Object", "Subobject", "Source", "Message", "First Seen", "Count", "Name"},
			[]interface{}{"30s", "Warning", "BackOff", "pod/web", "spec.containers{app}", "kubelet, node-1", "Back-off restarting failed container", "10m", int64(7), "web.1"}},
		{"Event", &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "n.1"}, InvolvedObject: corev1.ObjectReference{Kind: "Node"},
			Reason: "Starting", Type: "Normal", EventTime: metav1.NewMicroTime(tableNow.Add(-time.Minute)), ReportingController: "kubelet"},
			nil, []interface{}{"60s", "Normal", "Starting", "node", "", "kubelet", "", "60s", int64(1), "n.1"}},
		{"Namespace", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}},
			[]string{"Name", "Status", "Age"}, []interface{}{"default", "Active", "<unknown>"}},
		{"Secret", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", CreationTimestamp: ago(time.Minute)}, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"a": nil, "b": nil}},
			[]string{"Name", "Type", "Data", "Age"}, []interface{}{"s", "Opaque", int64(2), "60s"}},
		{"ConfigMap", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", CreationTimestamp: ago(time.Minute)}, Data: map[string]string{"a": ""}, BinaryData: map[string][]byte{"b": nil}},
			[]string{"Name", "Data", "Age"}, []interface{}{"c", int64(2), "60s"}},
		{"ServiceAccount", &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", CreationTimestamp: ago(time.Minute)}},
			[]string{"Name", "Age"}, []interface{}{"default", "60s"}},
		{"ResourceQuota", &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q", CreationTimestamp: ago(time.Minute)},
			Status: corev1.ResourceQuotaStatus{
				Hard: corev1.ResourceList{"pods": resource.MustParse("10"), "requests.cpu": resource.MustParse("2"), "limits.memory": resource.MustParse("1Gi")},
				Used: corev1.ResourceList{"pods": resource.MustParse("3"), "requests.cpu": resource.MustParse("500m")}}},
			[]string{"Name", "Request", "Limit", "Age"}, []interface{}{"q", "pods: 3/10, requests.cpu: 500m/2", "limits.memory: 0/1Gi", "60s"}},
		{"RoleBinding", &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b", CreationTimestamp: ago(time.Minute)},
			RoleRef:  rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"},
			Subjects: []rbacv1.Subject{{Kind: "User", Name: "viewer"}, {Kind: "Group", Name: "g"}, {Kind: "ServiceAccount", Namespace: "ns", Name: "sa"}, {Kind: "User", Name: "u2"}}},
			[]string{"Name", "Role", "Age", "Users", "Groups", "ServiceAccounts"}, []interface{}{"b", "ClusterRole/view", "60s", "viewer, u2", "g", "ns/sa"}},
		{"Lease", &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-1", CreationTimestamp: ago(time.Minute)}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}},
			[]string{"Name", "Holder", "Age"}, []interface{}{"node-1", "node-1", "60s"}},
		{"LimitRange", &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "l", CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 11, 0, 0, 0, time.UTC))}},
			[]string{"Name", "Created At"}, []interface{}{"l", "2026-01-01T11:00:00Z"}},
	}
	s := &Server{cfg: Config{Clock: clocktesting.NewFakeClock(tableNow)}}
	for _, tc := range tests {
		t.Run(tc.kind, func(t *testing.T) {
			table, err := s.toTable(&Resource{Kind: tc.kind}, tc.obj, "")
			if err != nil {
				t.Fatal(err)
			}
			if tc.columns != nil {
				var names []string
				for _, c := range table.ColumnDefinitions {
					names = append(names, c.Name)
				}
				if !reflect.DeepEqual(names, tc.columns) {
					t.Errorf("columns = %q, want %q", names, tc.columns)
				}
			}
			if len(table.Rows) != 1 || !reflect.DeepEqual(table.Rows[0].Cells, tc.cells) {
				t.Errorf("cells = %#v, want %#v", table.Rows[0].Cells, tc.cells)
			}
			if len(table.Rows[0].Cells) != len(table.ColumnDefinitions) {
				t.Errorf("%d cells for %d columns", len(table.Rows[0].Cells), len(table.ColumnDefinitions))
			}
		})
	}
}

// TestTableOfList keeps the list's resourceVersion and one row per item,
// each carrying the item's metadata for kubectl.
func TestTableOfList(t *testing.T) {
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "42"}, Items: []corev1.Pod{
		*testPod(func(p *corev1.Pod) { p.Name = "a" }), *testPod(func(p *corev1.Pod) { p.Name = "b" })}}
	s := &Server{cfg: Config{Clock: clocktesting.NewFakeClock(tableNow)}}
	table, err := s.toTable(&Resource{Kind: "Pod"}, list, "")
	if err != nil {
		t.Fatal(err)
	}
	if table.ResourceVersion != "42" || len(table.Rows) != 2 {
		t.Fatalf("table rv %q rows %d", table.ResourceVersion, len(table.Rows))
	}
	if m := table.Rows[1].Object.Object.(*metav1.PartialObjectMetadata); m.Name != "b" || m.Namespace != "default" {
		t.Errorf("row object %+v", m.ObjectMeta)
	}
	var wide int
	for _, c := range table.ColumnDefinitions {
		if c.Priority == 1 {
			wide++
		}
	}
	if wide != 4 {
		t.Errorf("%d priority-1 (wide) columns, want IP, Node, Nominated Node, Readiness Gates", wide)
	}
}

// TestTableIncludeObject honours includeObject: kubectl --sort-by asks for
// whole objects, the default is metadata only.
func TestTableIncludeObject(t *testing.T) {
	s := &Server{cfg: Config{Clock: clocktesting.NewFakeClock(tableNow)}}
	res := &Resource{GVR: coreV1.WithResource("pods"), Kind: "Pod"}
	pod := testPod(func(p *corev1.Pod) { p.Spec.NodeName = "node-1" })
	tests := []struct {
		include string
		check   func(runtime.Object) bool
	}{
		{"", func(o runtime.Object) bool {
			m, ok := o.(*metav1.PartialObjectMetadata)
			return ok && m.Name == "web" && m.Kind == "PartialObjectMetadata"
		}},
		{"Metadata", func(o runtime.Object) bool { _, ok := o.(*metav1.PartialObjectMetadata); return ok }},
		{"Object", func(o runtime.Object) bool {
			p, ok := o.(*corev1.Pod)
			return ok && p.Spec.NodeName == "node-1" && p.Kind == "Pod" && p.APIVersion == "v1"
		}},
		{"None", func(o runtime.Object) bool { return o == nil }},
	}
	for _, tc := range tests {
		table, err := s.toTable(res, pod, tc.include)
		if err != nil {
			t.Fatal(err)
		}
		if obj := table.Rows[0].Object.Object; !tc.check(obj) {
			t.Errorf("includeObject=%q: row object %#v", tc.include, obj)
		}
	}
	if pod.Kind != "" {
		t.Errorf("the stored object was modified: kind %q", pod.Kind)
	}
}
