package kubelet

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	engineclock "github.com/podtrace/podtrace/engine/clock"
	rtsim "github.com/podtrace/podtrace/engine/kubelet/runtime/sim"
	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

// recorder collects stage events; forPod returns the kubelet's.
type recorder struct {
	mu     sync.Mutex
	events []stages.Event
}

func (r *recorder) Emit(e stages.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) forPod(name string) []stages.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []stages.Event
	for _, e := range r.events {
		if e.Pod == name && e.Component == Component {
			out = append(out, e)
		}
	}
	return out
}

type testEnv struct {
	client kubernetes.Interface
	clock  *engineclock.Clock
	tracer *trace.Tracer
	events *recorder
	k      *Kubelet
}

// startKubelet runs a kubelet on a fake clientset with a clock at speed.
func startKubelet(t *testing.T, speed float64, lat *rtsim.Latency, objs ...any) *testEnv {
	t.Helper()
	client := fake.NewClientset()
	clk := engineclock.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), speed)
	rec := &recorder{}
	tr := trace.New(clk, rec)
	if lat == nil {
		lat = &rtsim.ZeroLatency
	}
	rt := rtsim.New(rtsim.Config{Clock: clk, Latency: lat, Seed: 1, Node: "node-1"})
	k, err := New(Config{Client: client, NodeName: "node-1", Clock: clk, Tracer: tr, Runtime: rt, PodCIDR: "10.244.1.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := k.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return &testEnv{client: client, clock: clk, tracer: tr, events: rec, k: k}
}

func newPod(name string, containers ...v1.Container) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:       v1.PodSpec{NodeName: "node-1", Containers: containers, RestartPolicy: v1.RestartPolicyAlways},
		Status: v1.PodStatus{Phase: v1.PodPending, Conditions: []v1.PodCondition{
			{Type: v1.PodScheduled, Status: v1.ConditionTrue}}},
	}
}

func (e *testEnv) create(t *testing.T, pod *v1.Pod) {
	t.Helper()
	// The scheduler would have reported bind; the tracer holds the kubelet
	// stage until it has.
	e.tracer.Emit(stages.Event{Namespace: pod.Namespace, Pod: pod.Name, UID: string(pod.UID), Stage: stages.Bind,
		Status: stages.Succeeded, Component: "default-scheduler", Node: pod.Spec.NodeName})
	if _, err := e.client.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls the pod until cond holds or 10 s of real time pass.
func (e *testEnv) waitFor(t *testing.T, name, what string, cond func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var pod *v1.Pod
	for time.Now().Before(deadline) {
		p, err := e.client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err == nil {
			pod = p
			if cond(p) {
				return p
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("pod %s never %s; last status %+v", name, what, pod.Status)
	return nil
}

func isReady(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// stageLine renders the events as "stage/container:status" for comparison.
func stageLine(evs []stages.Event, keep func(stages.Event) bool) string {
	var parts []string
	for _, e := range evs {
		if keep != nil && !keep(e) {
			continue
		}
		s := string(e.Stage)
		if e.Container != "" {
			s += "/" + e.Container
		}
		parts = append(parts, s+":"+string(e.Status))
	}
	return strings.Join(parts, " ")
}

// kubeEvents waits until the Kubernetes Events include every reason in want.
func (e *testEnv) kubeEvents(t *testing.T, want ...string) []v1.Event {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		list, err := e.client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		for _, ev := range list.Items {
			have[ev.Reason] = true
		}
		missing := false
		for _, r := range want {
			missing = missing || !have[r]
		}
		if !missing || time.Now().After(deadline) {
			return list.Items
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var pulledRE = regexp.MustCompile(`^Successfully pulled image "nginx:1.27" in [0-9.]+m?s \([0-9.]+m?s including waiting\). Image size: 72955450 bytes.$`)

func TestPodReachesReady(t *testing.T) {
	lat := rtsim.DefaultLatency
	env := startKubelet(t, 50, &lat)
	env.create(t, newPod("web", v1.Container{Name: "nginx", Image: "nginx:1.27", Ports: []v1.ContainerPort{{ContainerPort: 80}}}))
	pod := env.waitFor(t, "web", "became Ready", isReady)

	if pod.Status.Phase != v1.PodRunning || pod.Status.PodIP != "10.244.1.2" || pod.Status.QOSClass != v1.PodQOSBestEffort ||
		pod.Status.StartTime == nil || pod.Status.HostIP == "" {
		t.Fatalf("status %+v", pod.Status)
	}
	cs := pod.Status.ContainerStatuses[0]
	if cs.State.Running == nil || !cs.Ready || cs.Started == nil || !*cs.Started ||
		!strings.HasPrefix(cs.ContainerID, "podtrace-sim://") || !strings.HasPrefix(cs.ImageID, "docker.io/library/nginx@sha256:") {
		t.Fatalf("container status %+v", cs)
	}
	for _, typ := range []v1.PodConditionType{v1.PodScheduled, v1.PodReadyToStartContainers, v1.PodInitialized, v1.ContainersReady, v1.PodReady} {
		found := false
		for _, c := range pod.Status.Conditions {
			found = found || (c.Type == typ && c.Status == v1.ConditionTrue)
		}
		if !found {
			t.Errorf("condition %s not True: %+v", typ, pod.Status.Conditions)
		}
	}
	want := "kubelet:started kubelet:succeeded sandbox:started sandbox:succeeded cni:started cni:succeeded " +
		"pull/nginx:started pull/nginx:succeeded create/nginx:started create/nginx:succeeded start/nginx:started start/nginx:succeeded " +
		"hooks/nginx:started hooks/nginx:succeeded ready/nginx:started ready/nginx:succeeded"
	evs := env.events.forPod("web")
	if got := stageLine(evs, nil); got != want {
		t.Fatalf("stage events\n got %s\nwant %s", got, want)
	}
	for _, e := range evs {
		if e.Component != Component || e.Node != "node-1" || e.UID != "uid-web" {
			t.Fatalf("event %+v", e)
		}
		if e.Stage == stages.Pull && e.Status == stages.Succeeded {
			if !pulledRE.MatchString(e.Message) {
				t.Errorf("pull message %q", e.Message)
			}
			if e.DurationMs < 2500 {
				t.Errorf("pull took %vms of engine time, want about 3.2s", e.DurationMs)
			}
		}
	}
	reasons := map[string]string{}
	for _, ev := range env.kubeEvents(t, "Pulling", "Pulled", "Created", "Started") {
		reasons[ev.Reason] = ev.Message
	}
	for reason, msg := range map[string]string{"Pulling": `Pulling image "nginx:1.27"`, "Created": "Container created", "Started": "Container started"} {
		if reasons[reason] != msg {
			t.Errorf("event %s: %q, want %q (all: %v)", reason, reasons[reason], msg, reasons)
		}
	}
	if env.k.StatusWrites() > 4 {
		t.Errorf("%d status writes for one pod, want at most 4", env.k.StatusWrites())
	}
}

func TestInitHookReadinessOrder(t *testing.T) {
	env := startKubelet(t, 100, nil)
	pod := newPod("app", v1.Container{
		Name: "app", Image: "busybox:1.36",
		Command:   []string{"sh", "-c", "while true; do sleep 1; done"},
		Lifecycle: &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"touch", "/tmp/ready"}}}},
		ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"cat", "/tmp/ready"}}},
			InitialDelaySeconds: 5, PeriodSeconds: 5},
	})
	pod.Spec.InitContainers = []v1.Container{{Name: "setup", Image: "busybox:1.36", Command: []string{"sh", "-c", "sleep 3"}}}
	env.create(t, pod)
	p := env.waitFor(t, "app", "became Ready", isReady)
	init := p.Status.InitContainerStatuses[0]
	if init.State.Terminated == nil || init.State.Terminated.ExitCode != 0 || init.State.Terminated.Reason != "Completed" {
		t.Fatalf("init status %+v", init)
	}
	got := stageLine(env.events.forPod("app"), func(e stages.Event) bool { return e.Status.Terminal() })
	want := "kubelet:succeeded sandbox:succeeded cni:succeeded pull/setup:succeeded create/setup:succeeded start/setup:succeeded " +
		"pull/app:succeeded create/app:succeeded start/app:succeeded hooks/app:succeeded ready/app:succeeded"
	if got != want {
		t.Fatalf("order\n got %s\nwant %s", got, want)
	}
	var initDone, ready time.Time
	for _, e := range env.events.forPod("app") {
		if e.Stage == stages.Start && e.Container == "app" && e.Status == stages.Succeeded {
			initDone = e.Time
		}
		if e.Stage == stages.Ready && e.Status == stages.Succeeded {
			ready = e.Time
		}
	}
	if d := ready.Sub(initDone); d < 5*time.Second {
		t.Fatalf("ready %v after start, want after the 5s initial delay", d)
	}
}

func TestCrashLoopBackOff(t *testing.T) {
	env := startKubelet(t, 400, nil)
	env.create(t, newPod("crash", v1.Container{Name: "c", Image: "busybox:1.36", Command: []string{"sh", "-c", "exit 1"}}))
	env.waitFor(t, "crash", "restarted 3 times", func(p *v1.Pod) bool {
		if len(p.Status.ContainerStatuses) == 0 {
			return false
		}
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 3
	})
	var backoffs []string
	for _, e := range env.events.forPod("crash") {
		if e.Stage == stages.Start && e.Status == stages.Retrying && e.Reason == "CrashLoopBackOff" {
			backoffs = append(backoffs, strings.Fields(e.Message)[1])
			if !strings.HasSuffix(e.Message, "restarting failed container=c pod=crash_default(uid-crash)") || e.NextTry == nil {
				t.Fatalf("back-off event %+v", e)
			}
		}
	}
	if len(backoffs) < 2 || backoffs[0] != "10s" || backoffs[1] != "20s" {
		t.Fatalf("back-offs %v, want 10s, 20s, 40s", backoffs)
	}
	if len(backoffs) >= 3 && backoffs[2] != "40s" {
		t.Fatalf("back-offs %v, want 10s, 20s, 40s", backoffs)
	}
	// Status writes coalesce: the API shows the latest back-off.
	p := env.waitFor(t, "crash", "in CrashLoopBackOff", func(p *v1.Pod) bool {
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "CrashLoopBackOff" && strings.HasPrefix(w.Message, "back-off ")
	})
	cs := p.Status.ContainerStatuses[0]
	if p.Status.Phase != v1.PodRunning || cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 1 ||
		cs.LastTerminationState.Terminated.Reason != "Error" {
		t.Fatalf("status %+v", p.Status)
	}
}

func TestRestartPolicyNeverFails(t *testing.T) {
	env := startKubelet(t, 100, nil)
	pod := newPod("job", v1.Container{Name: "c", Image: "busybox:1.36", Command: []string{"sh", "-c", "sleep 2; exit 3"}})
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	env.create(t, pod)
	p := env.waitFor(t, "job", "Failed", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	term := p.Status.ContainerStatuses[0].State.Terminated
	if term == nil || term.ExitCode != 3 || term.Reason != "Error" || term.FinishedAt.Sub(term.StartedAt.Time) < 2*time.Second {
		t.Fatalf("terminated %+v", term)
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady && (c.Status != v1.ConditionFalse || c.Reason != "PodFailed") {
			t.Fatalf("ready condition %+v", c)
		}
	}
	ok := newPod("ok", v1.Container{Name: "c", Image: "busybox:1.36", Command: []string{"true"}})
	ok.Spec.RestartPolicy = v1.RestartPolicyNever
	env.create(t, ok)
	env.waitFor(t, "ok", "Succeeded", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded })
}

func TestImagePullBackOff(t *testing.T) {
	env := startKubelet(t, 200, nil)
	env.create(t, newPod("typo", v1.Container{Name: "c", Image: "nginx:lastest"}))
	p := env.waitFor(t, "typo", "in ImagePullBackOff", func(p *v1.Pod) bool {
		if len(p.Status.ContainerStatuses) == 0 {
			return false
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "ImagePullBackOff"
	})
	w := p.Status.ContainerStatuses[0].State.Waiting
	if !strings.HasPrefix(w.Message, `Back-off pulling image "nginx:lastest": ErrImagePull: rpc error: code = NotFound`) {
		t.Fatalf("waiting message %q", w.Message)
	}
	if p.Status.Phase != v1.PodPending {
		t.Fatalf("phase %s", p.Status.Phase)
	}
	// Attempts come 10 s, 20 s, 40 s apart: each failure names its next try.
	deadline := time.Now().Add(5 * time.Second)
	for {
		var gaps []time.Duration
		var last time.Time
		for _, e := range env.events.forPod("typo") {
			if e.Stage == stages.Pull && e.Reason == "ErrImagePull" {
				if e.NextTry == nil || e.Time.Before(last) {
					t.Fatalf("pull failure %+v", e)
				}
				gaps = append(gaps, e.NextTry.Sub(e.Time))
				last = *e.NextTry
			}
		}
		if len(gaps) >= 3 {
			near := func(d, want time.Duration) bool { return d > want-2*time.Second && d <= want }
			if !near(gaps[0], 10*time.Second) || !near(gaps[1], 20*time.Second) || !near(gaps[2], 40*time.Second) {
				t.Fatalf("pull back-offs %v, want 10s 20s 40s", gaps)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d pull attempts", len(gaps))
		}
		time.Sleep(10 * time.Millisecond)
	}

	env.create(t, newPod("bad", v1.Container{Name: "c", Image: "nginx:"}))
	p = env.waitFor(t, "bad", "InvalidImageName", func(p *v1.Pod) bool {
		if len(p.Status.ContainerStatuses) == 0 {
			return false
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "InvalidImageName"
	})
	if msg := p.Status.ContainerStatuses[0].State.Waiting.Message; msg != `Failed to apply default image tag "nginx:": couldn't parse image name "nginx:": invalid reference format` {
		t.Fatalf("message %q", msg)
	}
}

func TestDeleteGoesThroughTerminateAndCleanup(t *testing.T) {
	env := startKubelet(t, 100, nil)
	env.create(t, newPod("gone", v1.Container{Name: "web", Image: "nginx:1.27"}))
	p := env.waitFor(t, "gone", "became Ready", isReady)
	now := metav1.NewTime(env.clock.Now())
	p.DeletionTimestamp = &now
	p.DeletionGracePeriodSeconds = func() *int64 { v := int64(30); return &v }()
	if _, err := env.client.CoreV1().Pods("default").Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := env.client.CoreV1().Pods("default").Get(context.Background(), "gone", metav1.GetOptions{})
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("kubelet did not delete the pod")
		}
		time.Sleep(5 * time.Millisecond)
	}
	got := stageLine(env.events.forPod("gone"), func(e stages.Event) bool {
		return e.Stage == stages.Terminate || e.Stage == stages.Cleanup
	})
	if got != "terminate:started terminate:succeeded cleanup:started cleanup:succeeded" {
		t.Fatalf("teardown %s", got)
	}
	found := false
	for _, ev := range env.kubeEvents(t, "Killing") {
		found = found || (ev.Reason == "Killing" && ev.Message == "Stopping container web")
	}
	if !found {
		t.Fatal("no Killing event")
	}
}

func TestAdmit(t *testing.T) {
	alloc := v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi"), v1.ResourcePods: resource.MustParse("2")}
	withReq := func(cpu, mem string) *v1.Pod {
		return &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}}}}}}
	}
	tests := []struct {
		pod         *v1.Pod
		others      []*v1.Pod
		reason, msg string
	}{
		{pod: withReq("1", "1Gi")},
		{pod: withReq("500m", "1Gi"), others: []*v1.Pod{withReq("3800m", "1Gi")}, reason: "OutOfcpu",
			msg: "Node didn't have enough resource: cpu, requested: 500, used: 3800, capacity: 4000"},
		{pod: withReq("1", "8Gi"), others: []*v1.Pod{withReq("1", "1Gi")}, reason: "OutOfmemory",
			msg: fmt.Sprintf("Node didn't have enough resource: memory, requested: %d, used: %d, capacity: %d", 8<<30, 1<<30, 8<<30)},
		{pod: withReq("1", "1Gi"), others: []*v1.Pod{withReq("1", "1Gi"), withReq("1", "1Gi")}, reason: "OutOfpods",
			msg: "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2"},
	}
	for i, tt := range tests {
		reason, msg, ok := Admit(tt.pod, tt.others, alloc)
		if ok != (tt.reason == "") || reason != tt.reason || msg != tt.msg {
			t.Errorf("%d: got %v %q %q, want %q %q", i, ok, reason, msg, tt.reason, tt.msg)
		}
	}
}
