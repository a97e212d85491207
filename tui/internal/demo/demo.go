// Package demo is a tiny simulated Source for trying the UI without the
// engine: applying a workload plays a Deployment's pods through every stage
// with plausible timings, and a fail fault makes its stage retry until it is
// removed. It backs the UI's end-to-end test; it is not the engine.
package demo

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/podtrace/podtrace/stages"
	"github.com/podtrace/podtrace/tui"
)

// Source is the simulated cluster.
type Source struct {
	*tui.FakeSource
	mu     sync.Mutex
	faults []stages.Fault
	nextID int
	n      int
}

// New returns a simulated source with one built-in workload, "web" (3 replicas).
func New() *Source {
	s := &Source{}
	s.FakeSource = &tui.FakeSource{
		SourceName: "demo",
		C:          make(chan stages.Event, 4096),
		StatusFunc: func() tui.Status {
			return tui.Status{NodesReady: 3, NodesTotal: 3, Etcd: "healthy", Runtime: "simulated"}
		},
		WorkloadList: []tui.Workload{{Name: "web", Description: "nginx Deployment, 3 replicas",
			Manifest: []byte("kind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 3\n")}},
		ApplyFunc:     s.apply,
		DeletePodFunc: func(ns, name string) error { return fmt.Errorf("the demo cannot delete pods") },
		PodDetailFunc: func(ns, name string) (tui.PodDetail, error) {
			return tui.PodDetail{}, fmt.Errorf("the demo keeps no stored objects")
		},
		FaultControl: &tui.FakeFaults{
			AddFunc: s.addFault,
			RemoveFunc: func(id int) error {
				s.mu.Lock()
				defer s.mu.Unlock()
				for i, f := range s.faults {
					if f.ID == id {
						s.faults = append(s.faults[:i], s.faults[i+1:]...)
						return nil
					}
				}
				return fmt.Errorf("no fault %d", id)
			},
			ListFunc: func() []stages.Fault {
				s.mu.Lock()
				defer s.mu.Unlock()
				return append([]stages.Fault(nil), s.faults...)
			},
		},
		ClockControl: &tui.FakeClock{Rate: 1},
	}
	return s
}

func (s *Source) addFault(f stages.Fault) (stages.Fault, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	f.ID = s.nextID
	s.faults = append(s.faults, f)
	return f, nil
}

func (s *Source) failing(id stages.ID, pod, node string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.faults {
		if f.Stage == id && f.Kind == stages.Fail && f.Scope.Matches(pod, node) {
			return true
		}
	}
	return false
}

// apply plays the manifest's Deployment (name and replicas read from the text).
func (s *Source) apply(manifest []byte) error {
	name, replicas := "web", 3
	for _, line := range strings.Split(string(manifest), "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "name:"); ok {
			name = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "replicas:"); ok {
			fmt.Sscan(strings.TrimSpace(v), &replicas)
		}
	}
	s.mu.Lock()
	s.n++
	rs := fmt.Sprintf("%s-%d7f9c5b8d", name, s.n)
	s.mu.Unlock()
	go s.play(name, rs, replicas)
	return nil
}

func (s *Source) emit(e stages.Event) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	if e.Namespace == "" {
		e.Namespace = "default"
	}
	s.C <- e
}

// stage runs one stage for obj: started, a pause, then succeeded. A fail
// fault at the stage makes it retry every two seconds until removed.
func (s *Source) stage(kind, obj, node string, id stages.ID, d time.Duration, reason, msg string) {
	comp := id.Describe().Component
	for attempt := 1; ; attempt++ {
		start := time.Now()
		s.emit(stages.Event{Kind: kind, Pod: obj, Node: node, Stage: id, Status: stages.Started, Component: comp, Attempt: attempt})
		time.Sleep(d)
		if kind == stages.KindPod && s.failing(id, "default/"+obj, node) {
			next := time.Now().Add(2 * time.Second)
			s.emit(stages.Event{Kind: kind, Pod: obj, Node: node, Stage: id, Status: stages.Retrying, Component: comp, Attempt: attempt,
				DurationMs: ms(time.Since(start)), Reason: "Failed", Message: "injected fault at " + string(id), NextTry: &next})
			time.Sleep(2 * time.Second)
			continue
		}
		s.emit(stages.Event{Kind: kind, Pod: obj, Node: node, Stage: id, Status: stages.Succeeded, Component: comp, Attempt: attempt,
			DurationMs: ms(time.Since(start)), Reason: reason, Message: msg})
		return
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (s *Source) api(kind, obj string) {
	for _, id := range []stages.ID{stages.Authn, stages.Authz, stages.Admission, stages.Persist} {
		s.stage(kind, obj, "", id, time.Millisecond, "", "")
	}
}

func (s *Source) play(dep, rs string, replicas int) {
	s.api(stages.KindDeployment, dep)
	s.stage(stages.KindDeployment, dep, "", stages.Reconcile, 5*time.Millisecond, "ScalingReplicaSet",
		fmt.Sprintf("Scaled up replica set %s from 0 to %d", rs, replicas))
	s.api(stages.KindReplicaSet, rs)
	var wg sync.WaitGroup
	for i := 0; i < replicas; i++ {
		pod := fmt.Sprintf("%s-%05x", rs, rand.IntN(1<<20))
		node := fmt.Sprintf("node-%d", i%3+1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.api(stages.KindPod, pod)
			s.stage(stages.KindPod, pod, "", stages.Reconcile, 2*time.Millisecond, "SuccessfulCreate", "Created pod: "+pod)
			s.stage(stages.KindPod, pod, "", stages.Schedule, 3*time.Millisecond, "", "")
			s.stage(stages.KindPod, pod, node, stages.Bind, 5*time.Millisecond, "Scheduled", "Successfully assigned default/"+pod+" to "+node)
			s.stage(stages.KindPod, pod, node, stages.Kubelet, 20*time.Millisecond, "", "")
			s.stage(stages.KindPod, pod, node, stages.Sandbox, 150*time.Millisecond, "", "")
			s.stage(stages.KindPod, pod, node, stages.CNI, 60*time.Millisecond, "", "")
			s.stage(stages.KindPod, pod, node, stages.Pull, 800*time.Millisecond, "Pulled", `Successfully pulled image "nginx:1.27"`)
			s.stage(stages.KindPod, pod, node, stages.Create, 30*time.Millisecond, "Created", "Created container: nginx")
			s.stage(stages.KindPod, pod, node, stages.Start, 50*time.Millisecond, "Started", "Started container nginx")
			s.stage(stages.KindPod, pod, node, stages.Hooks, time.Millisecond, "", "")
			s.stage(stages.KindPod, pod, node, stages.Ready, 400*time.Millisecond, "", "")
		}()
		time.Sleep(10 * time.Millisecond)
	}
	wg.Wait()
	s.stage(stages.KindReplicaSet, rs, "", stages.Reconcile, time.Millisecond, "SuccessfulCreate", fmt.Sprintf("Created %d pods", replicas))
}
