package upstream

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	"k8s.io/utils/clock"

	"github.com/podtrace/podtrace/engine/etcd"
	"github.com/podtrace/podtrace/engine/hooks/sched"
	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/internal/waittest"
	"github.com/podtrace/podtrace/stages"
)

// schedEnv is one control plane shared by the scheduler tests: embedded
// etcd, kube-apiserver (StartAPIServer) and kube-scheduler with the hooks.
type schedEnv struct {
	client kubernetes.Interface
	tr     *trace.Tracer
	hooks  *sched.Hooks
	events *eventLog
	ns     string
}

// eventLog keeps the stage events emitted by the tracer.
type eventLog struct {
	mu     sync.Mutex
	events []stages.Event
}

func (l *eventLog) Emit(e stages.Event) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
}

// of returns the events of the pod ns/name at stage (every stage when empty).
func (l *eventLog) of(key string, stage stages.ID) []stages.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []stages.Event
	for _, e := range l.events {
		if e.Key() == key && (stage == "" || e.Stage == stage) {
			out = append(out, e)
		}
	}
	return out
}

const testNodes = 3

// TestScheduler runs the real kube-scheduler with the hooks on one control
// plane, shared by its subtests (which run in order: earlier pods stay).
func TestScheduler(t *testing.T) {
	env := startSchedEnv(t)
	t.Run("binds", env.testBinds)
	t.Run("unschedulable", env.testUnschedulable)
	t.Run("scheduleFault", env.testScheduleFault)
	t.Run("scheduleVariants", env.testScheduleVariants)
	t.Run("scheduleDelay", env.testScheduleDelay)
	t.Run("bindFault", env.testBindFault)
	t.Run("breakpoints", env.testBreakpoints)
	t.Run("step", env.testStep)
	t.Run("forgets", env.testForgets)
}

// TestSchedulerConfiguration loads the rendered configuration as
// kube-scheduler does (defaults and validation included).
func TestSchedulerConfiguration(t *testing.T) {
	for _, hooks := range []*sched.Hooks{nil, sched.New(nil)} {
		cfg := SchedulerConfig{Kubeconfig: "/etc/podtrace/scheduler.kubeconfig", Hooks: hooks, QPS: 1000, Burst: 2000}
		path := filepath.Join(t.TempDir(), "kube-scheduler.yaml")
		check(t, os.WriteFile(path, []byte(schedulerConfiguration(cfg)), 0o600))
		got, err := options.LoadConfigFromFile(klog.Background(), path)
		check(t, err)
		check(t, validation.ValidateKubeSchedulerConfiguration(got))
		cc := got.ClientConnection
		if cc.Kubeconfig != cfg.Kubeconfig || cc.QPS != 1000 || cc.Burst != 2000 || got.LeaderElection.LeaderElect {
			t.Errorf("client connection %+v, leader election %v", cc, got.LeaderElection.LeaderElect)
		}
		if len(got.Profiles) != 1 || got.Profiles[0].SchedulerName != sched.Component {
			t.Fatalf("profiles = %+v, want one %s", got.Profiles, sched.Component)
		}
		enabled := got.Profiles[0].Plugins.MultiPoint.Enabled
		if slices.ContainsFunc(enabled, func(p config.Plugin) bool { return p.Name == sched.PluginName }) != (hooks != nil) {
			t.Errorf("multiPoint = %v, want %s enabled: %v", enabled, sched.PluginName, hooks != nil)
		}
	}
}

func startSchedEnv(t *testing.T) *schedEnv {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	es, err := etcd.Start(ctx, etcd.Config{UnsafeNoFsync: true})
	check(t, err)
	t.Cleanup(func() { _ = es.Close() })
	dir := t.TempDir()
	api, err := StartAPIServer(ctx, apiServerFiles(t, dir, es.Endpoints))
	check(t, err)
	t.Cleanup(func() {
		// Stop the API server before etcd goes away.
		cancel()
		select {
		case <-api.Done():
		case <-time.After(10 * time.Second):
		}
	})
	kubeconfig := filepath.Join(dir, "scheduler.kubeconfig")
	check(t, writeKubeconfig(kubeconfig, api.Loopback))
	log := &eventLog{}
	tr := trace.New(clock.RealClock{}, log)
	hooks := sched.New(tr)
	check(t, StartScheduler(ctx, SchedulerConfig{Kubeconfig: kubeconfig, Dir: dir, Hooks: hooks}))
	env := &schedEnv{client: kubernetes.NewForConfigOrDie(api.Loopback), tr: tr, hooks: hooks, events: log, ns: "podtrace"}
	_, err = env.client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: env.ns}}, metav1.CreateOptions{})
	check(t, err)
	// No service account controller runs: the ServiceAccount admission
	// plugin needs the namespace's default account to exist.
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: env.ns, Name: "default"}}
	_, err = env.client.CoreV1().ServiceAccounts(env.ns).Create(ctx, sa, metav1.CreateOptions{})
	check(t, err)
	for i := range testNodes {
		node, err := env.client.CoreV1().Nodes().Create(ctx, testNode(fmt.Sprintf("node-%d", i)), metav1.CreateOptions{})
		check(t, err)
		// Admission (TaintNodesByCondition) taints a new node not-ready; no
		// node lifecycle controller runs to lift the taint once it is Ready.
		node.Spec.Taints = nil
		_, err = env.client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
		check(t, err)
	}
	return env
}

// apiServerFiles writes what kube-apiserver needs to start (a self-signed
// serving pair, which also serves as the client CA, and a service
// account key) and returns its configuration. The tests talk to it
// through its loopback configuration.
func apiServerFiles(t *testing.T, dir string, etcdServers []string) APIServerConfig {
	t.Helper()
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey("localhost", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	check(t, err)
	saKey, err := keyutil.MakeEllipticPrivateKeyPEM()
	check(t, err)
	cfg := APIServerConfig{
		EtcdServers:     etcdServers,
		ServingCertFile: filepath.Join(dir, "serving.crt"), ServingKeyFile: filepath.Join(dir, "serving.key"),
		ClientCAFile:          filepath.Join(dir, "serving.crt"),
		ServiceAccountKeyFile: filepath.Join(dir, "sa.key"),
	}
	for path, data := range map[string][]byte{
		cfg.ServingCertFile: certPEM, cfg.ServingKeyFile: keyPEM, cfg.ServiceAccountKeyFile: saKey,
	} {
		check(t, os.WriteFile(path, data, 0o600))
	}
	return cfg
}

func writeKubeconfig(path string, c *rest.Config) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["podtrace"] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthorityData: c.CAData, TLSServerName: c.ServerName}
	cfg.AuthInfos["scheduler"] = &clientcmdapi.AuthInfo{Token: c.BearerToken}
	cfg.Contexts["podtrace"] = &clientcmdapi.Context{Cluster: "podtrace", AuthInfo: "scheduler"}
	cfg.CurrentContext = "podtrace"
	return clientcmd.WriteToFile(*cfg, path)
}

func testNode(name string) *v1.Node {
	res := v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi"),
		v1.ResourcePods: resource.MustParse("110")}
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelHostname: name}},
		Status: v1.NodeStatus{Capacity: res, Allocatable: res,
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady"}}}}
}

func (env *schedEnv) createPod(t *testing.T, name, cpu string) *v1.Pod {
	t.Helper()
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.ns, Name: name},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}}},
	}
	pod, err := env.client.CoreV1().Pods(env.ns).Create(context.Background(), pod, metav1.CreateOptions{})
	check(t, err)
	return pod
}

// check fails the test on an error.
func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// poll and waitLong are how often and how long the tests wait for the
// scheduler: a minute, as CI's 2 cores are shared.
const (
	poll     = 50 * time.Millisecond
	waitLong = time.Minute
)

func (env *schedEnv) nodeOf(t *testing.T, name string) string {
	t.Helper()
	pod, err := env.client.CoreV1().Pods(env.ns).Get(context.Background(), name, metav1.GetOptions{})
	check(t, err)
	return pod.Spec.NodeName
}

func (env *schedEnv) waitBound(t *testing.T, name string) string {
	t.Helper()
	var node string
	waittest.EventuallyEvery(t, name+" to be bound", poll, waitLong, func() (bool, string) {
		node = env.nodeOf(t, name)
		return node != "", "not bound to a node"
	})
	return node
}

// failedScheduling returns the message of the pod's latest FailedScheduling Event.
func (env *schedEnv) failedScheduling(t *testing.T, name string) string {
	t.Helper()
	list, err := env.client.CoreV1().Events(env.ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.name=" + name + ",reason=FailedScheduling"})
	check(t, err)
	if n := len(list.Items); n > 0 {
		return list.Items[n-1].Message
	}
	return ""
}

// last returns the pod's last event at stage with status, if any.
func (env *schedEnv) last(name string, stage stages.ID, status stages.Status) (stages.Event, bool) {
	evs := env.events.of(env.ns+"/"+name, stage)
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Status == status {
			return evs[i], true
		}
	}
	return stages.Event{}, false
}

// waitEvent waits for the pod's event at stage with status and returns the last one.
func (env *schedEnv) waitEvent(t *testing.T, name string, stage stages.ID, status stages.Status) stages.Event {
	t.Helper()
	var e stages.Event
	waittest.EventuallyEvery(t, fmt.Sprintf("%s %s %s", name, stage, status), poll, waitLong, func() (bool, string) {
		var ok bool
		e, ok = env.last(name, stage, status)
		return ok, ""
	})
	return e
}

func (env *schedEnv) testBinds(t *testing.T) {
	env.createPod(t, "small", "100m")
	node := env.waitBound(t, "small")
	bind := env.waitEvent(t, "small", stages.Bind, stages.Succeeded)
	var got []string
	for _, e := range env.events.of(env.ns+"/small", "") {
		got = append(got, string(e.Stage)+":"+string(e.Status))
	}
	want := []string{"schedule:started", "schedule:succeeded", "bind:started", "bind:succeeded"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("events = %v, want %v", got, want)
	}
	sch, _ := env.last("small", stages.Schedule, stages.Succeeded)
	if sch.Component != sched.Component || sch.Attempt != 1 || sch.Node != node || sch.Scheduling == nil {
		t.Fatalf("schedule succeeded = %+v, want attempt 1 on %s with a scheduling result", sch, node)
	}
	if r := sch.Scheduling; r.Chosen != node || len(r.Nodes) != testNodes {
		t.Fatalf("scheduling result = %+v, want %d nodes and %s chosen", r, testNodes, node)
	}
	for _, v := range sch.Scheduling.Nodes {
		if v.Plugin != "" || len(v.Scores) == 0 {
			t.Errorf("verdict %+v: want a feasible, scored node", v)
		}
	}
	if want := fmt.Sprintf("Successfully assigned %s/small to %s", env.ns, node); bind.Reason != "Scheduled" || bind.Message != want || bind.Node != node {
		t.Fatalf("bind succeeded = %+v, want Scheduled %q", bind, want)
	}
}

// insufficientCPU is upstream's FailedScheduling message for a pod no node
// has the CPU left for, in a cluster without lower-priority pods to preempt.
var insufficientCPU = fmt.Sprintf("0/%d nodes are available: %d Insufficient cpu. no new claims to deallocate, preemption: 0/%d nodes are available: %d No preemption victims found for incoming pod.",
	testNodes, testNodes, testNodes, testNodes)

// tooBig is upstream's message for a pod that requests more CPU than any
// node has: evicting pods would not help.
var tooBig = fmt.Sprintf("0/%d nodes are available: %d Insufficient cpu. no new claims to deallocate, preemption: 0/%d nodes are available: %d Preemption is not helpful for scheduling.",
	testNodes, testNodes, testNodes, testNodes)

func (env *schedEnv) testUnschedulable(t *testing.T) {
	env.createPod(t, "huge", "10")
	env.expectFailedScheduling(t, "huge", tooBig, "NodeResourcesFit")
	// Fill every node (2 CPUs) to 1.5 CPUs: one filler fits per node.
	for i := range testNodes {
		env.createPod(t, fmt.Sprintf("filler-%d", i), "1500m")
	}
	for i := range testNodes {
		env.waitBound(t, fmt.Sprintf("filler-%d", i))
	}
	env.createPod(t, "full", "1")
	env.expectFailedScheduling(t, "full", insufficientCPU, "NodeResourcesFit")
}

// expectFailedScheduling waits for the pod's FailedScheduling Event and its
// retrying schedule event, both with msg, every node rejected by plugin.
func (env *schedEnv) expectFailedScheduling(t *testing.T, name, msg, plugin string) {
	t.Helper()
	var got string
	waittest.EventuallyEvery(t, "FailedScheduling for "+name, poll, waitLong, func() (bool, string) {
		got = env.failedScheduling(t, name)
		return got != "", ""
	})
	if got != msg {
		t.Errorf("FailedScheduling message = %q, want %q", got, msg)
	}
	e := env.waitEvent(t, name, stages.Schedule, stages.Retrying)
	if e.Reason != "FailedScheduling" || e.Message != got {
		t.Errorf("retrying event = %s %q, want FailedScheduling %q", e.Reason, e.Message, got)
	}
	if e.Scheduling == nil || len(e.Scheduling.Nodes) != testNodes {
		t.Fatalf("retrying event's scheduling = %+v, want %d verdicts", e.Scheduling, testNodes)
	}
	for _, v := range e.Scheduling.Nodes {
		if v.Plugin != plugin || v.Reason == "" {
			t.Errorf("verdict %+v, want rejected by %s", v, plugin)
		}
	}
	if env.nodeOf(t, name) != "" {
		t.Errorf("%s was bound", name)
	}
}

func (env *schedEnv) testScheduleFault(t *testing.T) {
	f := env.tr.Faults.Add(stages.Fault{Stage: stages.Schedule, Kind: stages.Fail, Variant: "cpu",
		Scope: stages.Scope{Pod: env.ns + "/faulted"}})
	env.createPod(t, "faulted", "100m")
	env.expectFailedScheduling(t, "faulted", insufficientCPU, "NodeResourcesFit")
	// Removing the fault lets the pod schedule, as a cluster event would.
	env.tr.Faults.Remove(f.ID)
	env.waitBound(t, "faulted")
}

// testScheduleVariants flakes one attempt of a pod per variant: the
// attempt fails with the upstream plugin's reason and preemption sentence,
// and the pod is retried and bound without anything else happening.
func (env *schedEnv) testScheduleVariants(t *testing.T) {
	const (
		noVictims  = "No preemption victims found for incoming pod."
		notHelpful = "Preemption is not helpful for scheduling."
	)
	for _, tt := range []struct{ variant, plugin, reason, preemption string }{
		{"memory", "NodeResourcesFit", "Insufficient memory", noVictims},
		{"pods", "NodeResourcesFit", "Too many pods", noVictims},
		{"ports", "NodePorts", "node(s) didn't have free ports for the requested pod ports", noVictims},
		{"taint", "TaintToleration", "node(s) had untolerated taint(s)", notHelpful},
		{"selector", "NodeAffinity", "node(s) didn't match Pod's node affinity/selector", notHelpful},
		{"unschedulable", "NodeUnschedulable", "node(s) were unschedulable", notHelpful},
	} {
		t.Run(tt.variant, func(t *testing.T) {
			name := "flake-" + tt.variant
			env.tr.Faults.Add(stages.Fault{Stage: stages.Schedule, Kind: stages.Flake, Count: 1, Variant: tt.variant,
				Scope: stages.Scope{Pod: env.ns + "/" + name}})
			env.createPod(t, name, "10m")
			node := env.waitBound(t, name)
			want := fmt.Sprintf("0/%d nodes are available: %d %s. no new claims to deallocate, preemption: 0/%d nodes are available: %d %s",
				testNodes, testNodes, tt.reason, testNodes, testNodes, tt.preemption)
			if got := env.failedScheduling(t, name); got != want {
				t.Errorf("FailedScheduling = %q, want %q", got, want)
			}
			e, _ := env.last(name, stages.Schedule, stages.Retrying)
			if e.Message != want || e.Attempt != 1 || e.Scheduling == nil || e.Scheduling.Nodes[0].Plugin != tt.plugin {
				t.Errorf("retrying event = %+v, want attempt 1 rejected by %s", e, tt.plugin)
			}
			if s, _ := env.last(name, stages.Schedule, stages.Succeeded); s.Attempt != 2 || s.Node != node {
				t.Errorf("schedule succeeded = attempt %d on %s, want attempt 2 on %s", s.Attempt, s.Node, node)
			}
		})
	}
}

// testScheduleDelay delays a pod's schedule stage: the gate waits in its own
// goroutine, shown as waiting, and the pod is scheduled after the delay.
func (env *schedEnv) testScheduleDelay(t *testing.T) {
	const delay = time.Second
	f := env.tr.Faults.Add(stages.Fault{Stage: stages.Schedule, Kind: stages.Delay, Delay: delay,
		Scope: stages.Scope{Pod: env.ns + "/slow"}})
	defer env.tr.Faults.Remove(f.ID)
	start := time.Now()
	env.createPod(t, "slow", "10m")
	env.waitBound(t, "slow")
	if took := time.Since(start); took < delay {
		t.Errorf("bound after %v, want at least %v", took, delay)
	}
	if e, ok := env.last("slow", stages.Schedule, stages.Waiting); !ok || e.Reason != "Delay" {
		t.Errorf("waiting event = %+v (%v), want reason Delay", e, ok)
	}
}

func (env *schedEnv) testBindFault(t *testing.T) {
	env.tr.Faults.Add(stages.Fault{Stage: stages.Bind, Kind: stages.Flake, Count: 1, Variant: "conflict",
		Scope: stages.Scope{Pod: env.ns + "/conflict"}})
	env.createPod(t, "conflict", "100m")
	node := env.waitBound(t, "conflict")
	e, ok := env.last("conflict", stages.Bind, stages.Retrying)
	want := `running PreBind plugin "PodTrace": Operation cannot be fulfilled on pods/binding "conflict": the object has been modified`
	if !ok || e.Reason != "FailedScheduling" || !strings.HasPrefix(e.Message, want) {
		t.Fatalf("bind retrying = %+v (%v), want FailedScheduling %q...", e, ok, want)
	}
	if msg := env.failedScheduling(t, "conflict"); msg != e.Message {
		t.Errorf("FailedScheduling message = %q, want %q", msg, e.Message)
	}
	env.waitEvent(t, "conflict", stages.Bind, stages.Succeeded)
	if s, _ := env.last("conflict", stages.Schedule, stages.Succeeded); s.Attempt != 2 || s.Node != node {
		t.Errorf("last schedule = attempt %d on %s, want attempt 2 on %s", s.Attempt, s.Node, node)
	}
}

// testBreakpoints holds a pod before schedule, then one before bind: each
// stays unbound while held and other pods still schedule; continued, it is
// scheduled and bound.
func (env *schedEnv) testBreakpoints(t *testing.T) {
	for _, stage := range []stages.ID{stages.Schedule, stages.Bind} {
		name := "held-" + string(stage)
		bp := stages.Breakpoint{Stage: stage, Scope: stages.Scope{Pod: env.ns + "/" + name}}
		env.tr.Breaks.Set(bp)
		env.createPod(t, name, "100m")
		env.waitHeld(t, name, stage)
		env.createPod(t, name+"-other", "100m")
		env.waitBound(t, name+"-other")
		if env.nodeOf(t, name) != "" {
			t.Fatalf("%s was bound while held at %s", name, stage)
		}
		if e, ok := env.last(name, stage, stages.Waiting); !ok || e.Reason != "Breakpoint" {
			t.Errorf("waiting event = %+v (%v), want reason Breakpoint", e, ok)
		}
		env.tr.Breaks.Remove(bp)
		env.tr.Breaks.Continue(env.ns + "/" + name)
		env.waitBound(t, name)
		if _, ok := env.last(name, stages.Schedule, stages.Succeeded); !ok {
			t.Errorf("%s: no schedule succeeded event", name)
		}
	}
}

// waitHeld waits until the pod is held at a breakpoint before stage.
func (env *schedEnv) waitHeld(t *testing.T, name string, stage stages.ID) {
	t.Helper()
	waittest.EventuallyEvery(t, name+" to be held before "+string(stage), poll, waitLong, func() (bool, string) {
		held := env.tr.Breaks.Held()
		for _, h := range held {
			if h.Pod == env.ns+"/"+name && h.Stage == stage {
				return true, ""
			}
		}
		return false, fmt.Sprintf("held: %+v", held)
	})
}

// testStep steps a pod held before schedule: it is scheduled, then held
// again before bind.
func (env *schedEnv) testStep(t *testing.T) {
	bp := stages.Breakpoint{Stage: stages.Schedule, Scope: stages.Scope{Pod: env.ns + "/stepped"}}
	env.tr.Breaks.Set(bp)
	env.createPod(t, "stepped", "10m")
	env.waitHeld(t, "stepped", stages.Schedule)
	env.tr.Breaks.Remove(bp)
	env.tr.Breaks.Step(env.ns + "/stepped")
	env.waitHeld(t, "stepped", stages.Bind)
	if _, ok := env.last("stepped", stages.Schedule, stages.Succeeded); !ok || env.nodeOf(t, "stepped") != "" {
		t.Fatalf("held before bind: want scheduled (%v) and not bound", ok)
	}
	env.tr.Breaks.Continue(env.ns + "/stepped")
	env.waitBound(t, "stepped")
}

// testForgets deletes the pending pods, one of them held at a breakpoint:
// the hold ends and the hooks keep nothing.
func (env *schedEnv) testForgets(t *testing.T) {
	ctx := context.Background()
	bp := stages.Breakpoint{Stage: stages.Schedule, Scope: stages.Scope{Pod: env.ns + "/deleted"}}
	env.tr.Breaks.Set(bp)
	defer env.tr.Breaks.Remove(bp)
	env.createPod(t, "deleted", "10m")
	env.waitHeld(t, "deleted", stages.Schedule)
	for _, name := range []string{"huge", "full", "deleted"} {
		check(t, env.client.CoreV1().Pods(env.ns).Delete(ctx, name, metav1.DeleteOptions{}))
	}
	waittest.EventuallyEvery(t, "the hooks to forget every pod", poll, waitLong, func() (bool, string) {
		n := env.hooks.Tracked()
		return n == 0, fmt.Sprintf("%d pods tracked", n)
	})
	waittest.EventuallyEvery(t, "the hold to end", poll, waitLong, func() (bool, string) {
		held := env.tr.Breaks.Held()
		return len(held) == 0, fmt.Sprintf("held: %+v", held)
	})
}
