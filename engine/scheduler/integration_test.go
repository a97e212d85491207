package scheduler

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podtrace/podtrace/engine/enginetest"
	"github.com/podtrace/podtrace/stages"
)

// startReal starts the real control plane with nodes created by the admin
// and a scheduler acting as system:kube-scheduler.
func startReal(t testing.TB, nodes ...*v1.Node) (*enginetest.Env, kubernetes.Interface, *Scheduler) {
	t.Helper()
	env := enginetest.Start(t)
	admin := env.Admin()
	for _, n := range nodes {
		created, err := admin.CoreV1().Nodes().Create(env.Ctx, n, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create node: %v", err)
		}
		if len(created.Status.Allocatable) == 0 { // status dropped on create: set it
			created.Status = n.Status
			if _, err := admin.CoreV1().Nodes().UpdateStatus(env.Ctx, created, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("node status: %v", err)
			}
		}
	}
	s, err := New(Config{Client: env.ClientFor(t, User), Clock: env.Clock, Tracer: env.Tracer, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(env.Ctx); err != nil {
		t.Fatal(err)
	}
	return env, admin, s
}

func createPod(t testing.TB, c kubernetes.Interface, p *v1.Pod) {
	t.Helper()
	if _, err := c.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", p.Name, err)
	}
}

func eventsFor(t testing.TB, c kubernetes.Interface, pod, reason string) []v1.Event {
	t.Helper()
	l, err := c.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []v1.Event
	for _, e := range l.Items {
		if e.InvolvedObject.Name == pod && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

func TestIntegrationBindsThroughAPI(t *testing.T) {
	env, admin, _ := startReal(t, makeNode("node-1", "2", "4Gi"), makeNode("node-2", "2", "4Gi"), makeNode("node-3", "2", "4Gi"))
	for i := range 3 {
		createPod(t, admin, makePod(fmt.Sprintf("web-%d", i), "500m", "256Mi"))
	}
	nodes := map[string]bool{}
	enginetest.WaitFor(t, 20*time.Second, "three pods bound", func() bool {
		l, err := admin.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		clear(nodes)
		for _, p := range l.Items {
			if p.Spec.NodeName == "" {
				return false
			}
			nodes[p.Spec.NodeName] = true
		}
		return len(l.Items) == 3
	})
	if len(nodes) != 3 {
		t.Errorf("pods on %v, want one per node", nodes)
	}
	for i := range 3 {
		name := fmt.Sprintf("web-%d", i)
		p, _ := admin.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		want := fmt.Sprintf("Successfully assigned default/%s to %s", name, p.Spec.NodeName)
		enginetest.WaitFor(t, 10*time.Second, "Scheduled event for "+name, func() bool { return len(eventsFor(t, admin, name, "Scheduled")) == 1 })
		ev := eventsFor(t, admin, name, "Scheduled")[0]
		if ev.Message != want || ev.Type != v1.EventTypeNormal || ev.Source.Component != Component {
			t.Errorf("event %q %s %+v, want %q", ev.Message, ev.Type, ev.Source, want)
		}
		var seq []string
		for _, e := range env.Events() {
			if e.Pod == name && (e.Stage == stages.Schedule || e.Stage == stages.Bind) {
				seq = append(seq, string(e.Stage)+":"+string(e.Status))
				if e.Component != Component || e.User != User {
					t.Errorf("%s event component %q user %q", e.Stage, e.Component, e.User)
				}
			}
		}
		if got := strings.Join(seq, " "); got != "schedule:started schedule:succeeded bind:started bind:succeeded" {
			t.Errorf("%s stage events: %s", name, got)
		}
	}
}

// TestIntegrationFailedScheduling checks the three named cases on a 3-node
// cluster: the PodScheduled condition and the FailedScheduling event carry
// kube-scheduler 1.36.3's message word for word.
func TestIntegrationFailedScheduling(t *testing.T) {
	tests := []struct {
		name  string
		taint bool
		pod   *v1.Pod
		want  string
	}{
		{"pod larger than every node", false, makePod("big", "8", "1Gi"),
			"0/3 nodes are available: 3 Insufficient cpu. no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."},
		{"untolerated taint", true, makePod("web", "100m", "64Mi"),
			"0/3 nodes are available: 3 node(s) had untolerated taint(s). no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."},
		{"nodeSelector matching nothing", false, makePod("ssd", "100m", "64Mi", withNodeSelector("disktype", "ssd")),
			"0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []func(*v1.Node)
			if tt.taint {
				opts = append(opts, withTaint("dedicated", "gpu", v1.TaintEffectNoSchedule))
			}
			env, admin, s := startReal(t, makeNode("node-1", "2", "4Gi", opts...), makeNode("node-2", "2", "4Gi", opts...), makeNode("node-3", "2", "4Gi", opts...))
			createPod(t, admin, tt.pod)
			var cond v1.PodCondition
			enginetest.WaitFor(t, 20*time.Second, "PodScheduled=False", func() bool {
				p, err := admin.CoreV1().Pods("default").Get(context.Background(), tt.pod.Name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range p.Status.Conditions {
					if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse {
						cond = c
						return true
					}
				}
				return false
			})
			if cond.Reason != "Unschedulable" || cond.Message != tt.want {
				t.Errorf("condition reason %q message\n got: %s\nwant: %s", cond.Reason, cond.Message, tt.want)
			}
			enginetest.WaitFor(t, 10*time.Second, "FailedScheduling event", func() bool { return len(eventsFor(t, admin, tt.pod.Name, "FailedScheduling")) > 0 })
			ev := eventsFor(t, admin, tt.pod.Name, "FailedScheduling")[0]
			if ev.Message != tt.want || ev.Type != v1.EventTypeWarning || ev.Source.Component != Component {
				t.Errorf("event %s %+v message\n got: %s\nwant: %s", ev.Type, ev.Source, ev.Message, tt.want)
			}
			var retry *stages.Event
			for _, e := range env.Events() {
				if e.Pod == tt.pod.Name && e.Stage == stages.Schedule && e.Status == stages.Retrying {
					retry = &e
					break
				}
			}
			if retry == nil || retry.Reason != "FailedScheduling" || retry.Message != tt.want || retry.Scheduling == nil || len(retry.Scheduling.Nodes) != 3 {
				t.Fatalf("schedule retrying event %+v", retry)
			}
			if last, ok := s.LastAttempt("default", tt.pod.Name); !ok || len(last.Nodes) != 3 || last.Nodes[0].Plugin == "" {
				t.Errorf("LastAttempt %+v %v", last, ok)
			}
		})
	}
}
