package attach_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/attach"
	"github.com/podtrace/podtrace/engine/enginetest"
	"github.com/podtrace/podtrace/engine/logs"
	"github.com/podtrace/podtrace/engine/nodes"
	"github.com/podtrace/podtrace/internal/testproc"
	"github.com/podtrace/podtrace/stages"
)

// TestMain runs each test that starts a cluster in a process of its own
// (testproc.OwnProcess), several at once, each in a pod network
// namespace of its own.
func TestMain(m *testing.M) { enginetest.MainOwnProcesses(m) }

// collector gathers emitted events.
type collector struct {
	mu  sync.Mutex
	evs []stages.Event
}

func (c *collector) Emit(e stages.Event) {
	c.mu.Lock()
	c.evs = append(c.evs, e)
	c.mu.Unlock()
}

func (c *collector) events() []stages.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]stages.Event(nil), c.evs...)
}

func deployment(name string, replicas int32, cpu string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	c := corev1.Container{Name: "web", Image: "nginx:1.27"}
	if cpu != "" {
		c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}}}
}

// TestAttachRebuildsStagesFromTheAPI runs the embedded engine, attaches to
// it only through its API (as to any cluster), and expects every observable
// stage of each pod of a Deployment in lifecycle order, a ReplicaSet lane
// reconciled by the deployment controller, and an unschedulable pod's
// FailedScheduling text word for word as the scheduler wrote it.
func TestAttachRebuildsStagesFromTheAPI(t *testing.T) {
	if testproc.OwnProcess(t) {
		return
	}
	logs.To(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, err := engine.Start(ctx, engine.Config{DataDir: enginetest.DataDir(t), UnsafeNoFsync: true, Nodes: nodes.Defaults(2), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	live := e.Hub.Record()
	col := &collector{}
	w, err := attach.New(attach.Config{Client: e.AdminClient(), Namespace: "default",
		Target: attach.Target{}, Emitter: col})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	admin := e.AdminClient()
	for _, d := range []*appsv1.Deployment{deployment("web", 2, ""), deployment("huge", 1, "100")} {
		if _, err := admin.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	observable := []stages.ID{stages.Persist, stages.Reconcile, stages.Schedule, stages.Bind, stages.Kubelet,
		stages.Sandbox, stages.CNI, stages.Pull, stages.Create, stages.Start, stages.Hooks, stages.Ready}
	firsts := func(pod string) []stages.ID {
		var out []stages.ID
		seen := map[stages.ID]bool{}
		for _, ev := range col.events() {
			if ev.Kind == stages.KindPod && ev.Pod == pod && ev.Status == stages.Succeeded && !seen[ev.Stage] {
				seen[ev.Stage] = true
				out = append(out, ev.Stage)
			}
		}
		return out
	}
	webPods := func() []string {
		var out []string
		seen := map[string]bool{}
		for _, ev := range col.events() {
			if ev.Kind == stages.KindPod && strings.HasPrefix(ev.Pod, "web-") && !seen[ev.Pod] {
				seen[ev.Pod] = true
				out = append(out, ev.Pod)
			}
		}
		return out
	}
	enginetest.WaitFor(t, 60*time.Second, "both web pods' lanes complete", func() bool {
		pods := webPods()
		if len(pods) != 2 {
			return false
		}
		for _, p := range pods {
			if len(firsts(p)) < len(observable) {
				return false
			}
		}
		return true
	})
	for _, p := range webPods() {
		if got := firsts(p); !slices.Equal(got, observable) {
			t.Errorf("pod %s: stages %v, want %v in this order", p, got, observable)
		}
	}
	var failed stages.Event
	enginetest.WaitFor(t, 30*time.Second, "FailedScheduling of the huge pod", func() bool {
		for _, ev := range col.events() {
			if strings.HasPrefix(ev.Pod, "huge-") && ev.Stage == stages.Schedule && ev.Reason == "FailedScheduling" {
				failed = ev
				return true
			}
		}
		return false
	})
	var want string
	for _, ev := range live.Events() {
		if ev.Pod == failed.Pod && ev.Stage == stages.Schedule && ev.Reason == "FailedScheduling" {
			want = ev.Message
		}
	}
	if failed.Message != want || !strings.HasPrefix(want, "0/2 nodes are available: 2 Insufficient cpu.") {
		t.Errorf("FailedScheduling message %q, want the scheduler's %q", failed.Message, want)
	}
	if failed.Status != stages.Retrying || failed.Component != "default-scheduler" {
		t.Errorf("FailedScheduling event %s by %s, want retrying by default-scheduler", failed.Status, failed.Component)
	}
	var rsReconciled bool
	for _, ev := range col.events() {
		if ev.Kind == stages.KindReplicaSet && strings.HasPrefix(ev.Pod, "web-") && ev.Stage == stages.Reconcile &&
			ev.Reason == "ScalingReplicaSet" && ev.Component == "deployment-controller" &&
			strings.HasPrefix(ev.Message, "Scaled up replica set web-") {
			rsReconciled = true
		}
		// Only the scheduler's events.k8s.io Events and deletions carry finer
		// times; what comes from metadata, conditions and core/v1 Events must
		// not pretend to be finer than the API's second.
		if ev.Time.Truncate(time.Second) != ev.Time && ev.Stage != stages.Schedule && ev.Stage != stages.Bind && ev.Stage != stages.Delete {
			t.Errorf("%s %s at %s: finer than the API's second", ev.Pod, ev.Stage, ev.Time.Format(time.RFC3339Nano))
		}
	}
	if !rsReconciled {
		t.Error("no ScalingReplicaSet reconcile on the web ReplicaSet lane")
	}
}

// TestAttachTarget shows only the Deployment named, its ReplicaSet and its pods.
func TestAttachTarget(t *testing.T) {
	if testproc.OwnProcess(t) {
		return
	}
	logs.To(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, err := engine.Start(ctx, engine.Config{DataDir: enginetest.DataDir(t), UnsafeNoFsync: true, Nodes: nodes.Defaults(1), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	admin := e.AdminClient()
	for _, d := range []*appsv1.Deployment{deployment("web", 1, ""), deployment("other", 1, "")} {
		if _, err := admin.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	target, err := attach.ParseTarget("deploy/web")
	if err != nil {
		t.Fatal(err)
	}
	col := &collector{}
	w, err := attach.New(attach.Config{Client: admin, Namespace: "default", Target: target, Emitter: col})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	enginetest.WaitFor(t, 30*time.Second, "web's pod Ready", func() bool {
		for _, ev := range col.events() {
			if ev.Kind == stages.KindPod && ev.Stage == stages.Ready {
				return true
			}
		}
		return false
	})
	kinds := map[string]bool{}
	for _, ev := range col.events() {
		kinds[ev.Kind] = true
		if !strings.HasPrefix(ev.Pod, "web") {
			t.Errorf("event about %s %s, outside deploy/web", ev.Kind, ev.Pod)
		}
	}
	if !kinds[stages.KindDeployment] || !kinds[stages.KindReplicaSet] || !kinds[stages.KindPod] {
		t.Errorf("kinds seen %v, want Deployment, ReplicaSet and Pod lanes", kinds)
	}
}

func TestAttachFailsInOneLine(t *testing.T) {
	for _, host := range []string{"https://127.0.0.1:1", "http://127.0.0.1:1/nope"} {
		c := kubernetes.NewForConfigOrDie(&rest.Config{Host: host, Timeout: 2 * time.Second})
		w, err := attach.New(attach.Config{Client: c, Emitter: stages.Discard})
		if err != nil {
			t.Fatal(err)
		}
		err = w.Start(context.Background())
		if err == nil || strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), "cannot read pods: ") {
			t.Errorf("%s: error %q, want one line starting 'cannot read pods: '", host, err)
		}
	}
}

// A target that does not exist fails as kubectl says it.
func TestAttachTargetNotFound(t *testing.T) {
	for target, want := range map[string]string{
		"deploy/nothere": `Error from server (NotFound): deployments.apps "nothere" not found`,
		"pod/nothere":    `Error from server (NotFound): pods "nothere" not found`,
	} {
		tg, err := attach.ParseTarget(target)
		if err != nil {
			t.Fatal(err)
		}
		err = attach.CheckTarget(context.Background(), fake.NewClientset(), "default", tg)
		if err == nil || err.Error() != want {
			t.Errorf("%s: error %v, want %s", target, err, want)
		}
	}
}

func TestParseTarget(t *testing.T) {
	for _, tt := range []struct {
		in, want, err string
	}{
		{"pod/web-1", "pod/web-1", ""},
		{"po/web-1", "pod/web-1", ""},
		{"deploy/web", "deploy/web", ""},
		{"deployment/web", "deploy/web", ""},
		{"svc/web", "", `unknown kind "svc"`},
		{"web", "", "want pod/NAME or deploy/NAME"},
		{"pod/", "", "want pod/NAME or deploy/NAME"},
	} {
		got, err := attach.ParseTarget(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: error %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got.String() != tt.want {
			t.Errorf("%q: %v %v, want %s", tt.in, got, err, tt.want)
		}
	}
}

// TestAttachReadsTheAuditLog follows an audit log being written and puts
// each write's authn, authz and admission on the object's lane, before
// its persist, and skips what is outside the namespace.
func TestAttachReadsTheAuditLog(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t0 := time.Now().UTC().Truncate(time.Second)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default", UID: "u1",
		CreationTimestamp: metav1.NewTime(t0)}}
	col := &collector{}
	w, err := attach.New(attach.Config{Client: fake.NewClientset(pod), Namespace: "default", Emitter: col, Settle: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	line := func(ns string) string {
		return `{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"a","stage":"ResponseComplete","verb":"create",` +
			`"user":{"username":"alice"},"userAgent":"kubectl/v1.36.3","objectRef":{"resource":"pods","namespace":"` + ns + `","name":"web-1"},` +
			`"responseStatus":{"code":201},"responseObject":{"metadata":{"name":"web-1","uid":"u1"}},` +
			`"requestReceivedTimestamp":"` + t0.Format(time.RFC3339Nano) + `","stageTimestamp":"` + t0.Add(20*time.Millisecond).Format(time.RFC3339Nano) + `",` +
			`"annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":"RBAC: allowed by ClusterRoleBinding"}}` + "\n"
	}
	// Half a line first: the API server may be mid-write.
	full := line("default")
	if _, err := f.WriteString(line("other") + full[:40]); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.TailAudit(ctx, path); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if _, err := f.WriteString(full[40:]); err != nil {
		t.Fatal(err)
	}
	enginetest.WaitFor(t, 5*time.Second, "admission from the audit log", func() bool {
		for _, e := range col.events() {
			if e.Stage == stages.Admission {
				return true
			}
		}
		return false
	})
	var got []string
	for _, e := range col.events() {
		got = append(got, string(e.Stage))
		if e.Stage == stages.Authn && (e.User != "alice" || e.UserAgent != "kubectl/v1.36.3" || e.DurationMs != 20) {
			t.Errorf("authn event %+v", e)
		}
		if e.Stage == stages.Authz && e.Message != "RBAC: allowed by ClusterRoleBinding" {
			t.Errorf("authz message %q", e.Message)
		}
	}
	if strings.Join(got, " ") != "authn authz admission persist" {
		t.Errorf("stages %v, want authn authz admission persist (once each, the other namespace skipped)", got)
	}
	if err := w.TailAudit(ctx, filepath.Join(t.TempDir(), "missing.log")); err == nil || !strings.HasPrefix(err.Error(), "audit log: ") {
		t.Errorf("missing audit log: %v", err)
	}
}

// TestAttachShowsRetries breaks the first image pull and the first start
// of a pod in the embedded engine: attach shows the kubelet's Failed and
// BackOff as retrying attempts of pull and start, then their success.
func TestAttachShowsRetries(t *testing.T) {
	if testproc.OwnProcess(t) {
		return
	}
	logs.To(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, err := engine.Start(ctx, engine.Config{DataDir: enginetest.DataDir(t), UnsafeNoFsync: true, Nodes: nodes.Defaults(1), Seed: 1, Speed: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, f := range []string{"pull:flake:1@pod/default/flaky", "start:flake:1@pod/default/flaky"} {
		fault, err := stages.ParseFault(f)
		if err != nil {
			t.Fatal(err)
		}
		e.Tracer.Faults.Add(fault)
	}
	// attach names a pod that exists (kubectl's NotFound otherwise); what
	// happened before it started is rebuilt from the pod and its Events.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "flaky", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}}}
	if _, err := e.AdminClient().CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	col := &collector{}
	w, err := attach.New(attach.Config{Client: e.AdminClient(), Namespace: "default", Target: attach.Target{Kind: stages.KindPod, Name: "flaky"}, Emitter: col})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	enginetest.WaitFor(t, 60*time.Second, "flaky Ready", func() bool {
		for _, ev := range col.events() {
			if ev.Stage == stages.Ready && ev.Status == stages.Succeeded {
				return true
			}
		}
		return false
	})
	var story []string
	for _, ev := range col.events() {
		if ev.Stage == stages.Pull || ev.Stage == stages.Start {
			story = append(story, string(ev.Stage)+":"+string(ev.Status)+":"+ev.Reason)
		}
	}
	s := strings.Join(story, " ")
	for _, want := range []string{"pull:retrying:Failed", "pull:retrying:BackOff", "pull:succeeded:Pulled",
		"start:retrying:Failed", "start:succeeded:Started"} {
		if !strings.Contains(s, want) {
			t.Errorf("no %s in %s", want, s)
		}
	}
	if strings.Index(s, "pull:retrying:Failed") > strings.Index(s, "pull:retrying:BackOff") ||
		strings.Index(s, "pull:retrying:BackOff") > strings.Index(s, "pull:succeeded") {
		t.Errorf("pull's story out of order (Failed, BackOff, then Pulled): %s", s)
	}
}
