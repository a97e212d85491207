package tui

import (
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/podtrace/podtrace/stages"
)

// t0 is when the fixture's story starts; wall is the fixed wall clock.
var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// story is a small cluster: Deployment web with three pods (one Running, one
// in ImagePullBackOff, one held at a breakpoint), pod api-0 pulling, and pod
// batch that no node fits.
func story() []stages.Event {
	var evs []stages.Event
	span := func(kind, name, node string, id stages.ID, from, to int, st stages.Status, reason, msg string) {
		comp := id.Describe().Component
		evs = append(evs, stages.Event{Time: at(from), Kind: kind, Namespace: "default", Pod: name, Node: node,
			Stage: id, Status: stages.Started, Component: comp, Attempt: 1})
		if st == stages.Started {
			return
		}
		evs = append(evs, stages.Event{Time: at(to), Kind: kind, Namespace: "default", Pod: name, Node: node,
			Stage: id, Status: st, Component: comp, Attempt: 1, DurationMs: float64(to - from), Reason: reason, Message: msg})
	}
	api := func(kind, name string, start int) {
		span(kind, name, "", stages.Authn, start, start+1, stages.Succeeded, "", "")
		span(kind, name, "", stages.Authz, start+1, start+2, stages.Succeeded, "", "")
		span(kind, name, "", stages.Admission, start+2, start+4, stages.Succeeded, "", "")
		span(kind, name, "", stages.Persist, start+4, start+9, stages.Succeeded, "", "")
	}
	api(stages.KindDeployment, "web", 0)
	span(stages.KindDeployment, "web", "", stages.Reconcile, 10, 14, stages.Succeeded, "ScalingReplicaSet", "Scaled up replica set web-7d9c5b8f4 from 0 to 3")
	api(stages.KindReplicaSet, "web-7d9c5b8f4", 15)
	pods := []string{"web-7d9c5b8f4-2xk9p", "web-7d9c5b8f4-8mzq1", "web-7d9c5b8f4-qv4tn"}
	nodes := []string{"node-1", "node-2", "node-3"}
	for i, p := range pods {
		base := 30 + i*5
		api(stages.KindPod, p, base)
		span(stages.KindReplicaSet, "web-7d9c5b8f4", "", stages.Reconcile, base+9, base+10, stages.Succeeded, "SuccessfulCreate", "Created pod: "+p)
		span(stages.KindPod, p, "", stages.Reconcile, base+9, base+10, stages.Succeeded, "SuccessfulCreate", "Created pod: "+p)
		span(stages.KindPod, p, "", stages.Schedule, base+20, base+23, stages.Succeeded, "", "")
		span(stages.KindPod, p, nodes[i], stages.Bind, base+23, base+30, stages.Succeeded, "Scheduled", "Successfully assigned default/"+p+" to "+nodes[i])
	}
	// Pod 1 runs.
	p, n := pods[0], nodes[0]
	span(stages.KindPod, p, n, stages.Kubelet, 70, 80, stages.Succeeded, "", "")
	span(stages.KindPod, p, n, stages.Sandbox, 80, 180, stages.Succeeded, "", "")
	span(stages.KindPod, p, n, stages.CNI, 180, 230, stages.Succeeded, "", "")
	span(stages.KindPod, p, n, stages.Pull, 230, 1430, stages.Succeeded, "Pulled", `Successfully pulled image "nginx:1.27" in 1.2s (1.2s including waiting). Image size: 72099410 bytes.`)
	span(stages.KindPod, p, n, stages.Create, 1430, 1440, stages.Succeeded, "Created", "Created container: nginx")
	span(stages.KindPod, p, n, stages.Start, 1440, 1490, stages.Succeeded, "Started", "Started container nginx")
	span(stages.KindPod, p, n, stages.Hooks, 1490, 1491, stages.Succeeded, "", "")
	span(stages.KindPod, p, n, stages.Ready, 1491, 2491, stages.Succeeded, "", "")
	// Pod 2 cannot pull its image.
	p, n = pods[1], nodes[1]
	span(stages.KindPod, p, n, stages.Kubelet, 75, 85, stages.Succeeded, "", "")
	span(stages.KindPod, p, n, stages.Sandbox, 85, 185, stages.Succeeded, "", "")
	span(stages.KindPod, p, n, stages.CNI, 185, 235, stages.Succeeded, "", "")
	next := at(25000)
	evs = append(evs,
		stages.Event{Time: at(235), Namespace: "default", Pod: p, Node: n, Stage: stages.Pull, Status: stages.Started, Component: "kubelet", Container: "nginx", Attempt: 1},
		stages.Event{Time: at(900), Namespace: "default", Pod: p, Node: n, Stage: stages.Pull, Status: stages.Retrying, Component: "kubelet", Container: "nginx", Attempt: 3,
			DurationMs: 665, Reason: "Failed", Message: `Failed to pull image "nginx:1.277": rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/library/nginx:1.277": docker.io/library/nginx:1.277: not found`, NextTry: &next})
	// Pod 3 is held before sandbox.
	p, n = pods[2], nodes[2]
	span(stages.KindPod, p, n, stages.Kubelet, 80, 90, stages.Succeeded, "", "")
	evs = append(evs, stages.Event{Time: at(90), Namespace: "default", Pod: p, Node: n, Stage: stages.Sandbox, Status: stages.Waiting,
		Component: "kubelet", Attempt: 1, Reason: "Breakpoint", Message: "held before sandbox: press n to step, c to continue"})
	// api-0 is pulling.
	api(stages.KindPod, "api-0", 100)
	span(stages.KindPod, "api-0", "", stages.Schedule, 110, 112, stages.Succeeded, "", "")
	span(stages.KindPod, "api-0", "node-1", stages.Bind, 112, 118, stages.Succeeded, "Scheduled", "Successfully assigned default/api-0 to node-1")
	span(stages.KindPod, "api-0", "node-1", stages.Kubelet, 118, 128, stages.Succeeded, "", "")
	span(stages.KindPod, "api-0", "node-1", stages.Sandbox, 128, 228, stages.Succeeded, "", "")
	span(stages.KindPod, "api-0", "node-1", stages.CNI, 228, 278, stages.Succeeded, "", "")
	span(stages.KindPod, "api-0", "node-1", stages.Pull, 278, 0, stages.Started, "", "")
	// batch fits no node.
	api(stages.KindPod, "batch", 200)
	nextSched := at(12000)
	evs = append(evs,
		stages.Event{Time: at(210), Namespace: "default", Pod: "batch", Stage: stages.Schedule, Status: stages.Started, Component: "default-scheduler", Attempt: 1},
		stages.Event{Time: at(214), Namespace: "default", Pod: "batch", Stage: stages.Schedule, Status: stages.Retrying, Component: "default-scheduler", Attempt: 2,
			DurationMs: 4, Reason: "FailedScheduling", NextTry: &nextSched,
			Message: "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint(s). preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling.",
			Scheduling: &stages.SchedulingResult{Nodes: []stages.NodeVerdict{
				{Node: "node-1", Plugin: "NodeResourcesFit", Reason: "Insufficient cpu"},
				{Node: "node-2", Plugin: "TaintToleration", Reason: "node(s) had untolerated taint(s)"},
				{Node: "node-3", Plugin: "TaintToleration", Reason: "node(s) had untolerated taint(s)"},
			}}},
	)
	return evs
}

// kubeStory is the Kubernetes Events the story's components would record.
func kubeStory() []K8sEvent {
	var evs []K8sEvent
	add := func(ms int, typ, obj, reason, msg string, count int) {
		evs = append(evs, K8sEvent{Type: typ, Reason: reason, Message: msg, Count: count, LastSeen: at(ms), FirstSeen: at(ms / max(1, count)),
			Namespace: "default", Name: obj + "." + itoa(ms), Object: obj})
	}
	add(14, "Normal", "deployment/web", "ScalingReplicaSet", "Scaled up replica set web-7d9c5b8f4 from 0 to 3", 1)
	for i, p := range []string{"web-7d9c5b8f4-2xk9p", "web-7d9c5b8f4-8mzq1", "web-7d9c5b8f4-qv4tn"} {
		add(40+i*5, "Normal", "replicaset/web-7d9c5b8f4", "SuccessfulCreate", "Created pod: "+p, 1)
		add(60+i*5, "Normal", "pod/"+p, "Scheduled", "Successfully assigned default/"+p+" to node-"+itoa(i+1), 1)
	}
	add(230, "Normal", "pod/web-7d9c5b8f4-2xk9p", "Pulling", `Pulling image "nginx:1.27"`, 1)
	add(1430, "Normal", "pod/web-7d9c5b8f4-2xk9p", "Pulled", `Successfully pulled image "nginx:1.27" in 1.2s (1.2s including waiting). Image size: 72099410 bytes.`, 1)
	add(1440, "Normal", "pod/web-7d9c5b8f4-2xk9p", "Created", "Created container: nginx", 1)
	add(1490, "Normal", "pod/web-7d9c5b8f4-2xk9p", "Started", "Started container nginx", 1)
	add(900, "Warning", "pod/web-7d9c5b8f4-8mzq1", "Failed", `Failed to pull image "nginx:1.277": rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/library/nginx:1.277": docker.io/library/nginx:1.277: not found`, 3)
	add(905, "Normal", "pod/web-7d9c5b8f4-8mzq1", "BackOff", `Back-off pulling image "nginx:1.277"`, 2)
	add(214, "Warning", "pod/batch", "FailedScheduling", "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint(s). preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling.", 2)
	add(118, "Normal", "pod/api-0", "Scheduled", "Successfully assigned default/api-0 to node-1", 1)
	add(280, "Normal", "pod/api-0", "Pulling", `Pulling image "api:2.1"`, 1)
	return evs
}

// fixture returns a model on a fake source holding the story, at w×h, with
// the wall clock fixed 3 s after the story began.
func fixture(w, h int, theme string) (*Model, *FakeSource, *recorder) {
	rec := &recorder{}
	ff := rec.faults()
	src := &FakeSource{
		SourceName: "embedded",
		C:          make(chan stages.Event, 1024),
		StatusFunc: func() Status { return Status{NodesReady: 3, NodesTotal: 3, Etcd: "healthy", Runtime: "simulated"} },
		WorkloadList: []Workload{
			{Name: "web", Description: "nginx Deployment, 3 replicas", Manifest: []byte("kind: Deployment")},
			{Name: "crashloop", Description: "a container that exits 1", Manifest: []byte("kind: Pod")},
		},
		ApplyFunc:     func(b []byte) error { rec.add("apply " + string(b)); return nil },
		DeletePodFunc: func(ns, name string) error { rec.add("delete " + ns + "/" + name); return nil },
		ScaleFunc: func(ns, kind, name string, n int) error {
			rec.add("scale " + ns + " " + kind + " " + name + " " + itoa(n))
			return nil
		},
		PodDetailFunc: func(ns, name string) (PodDetail, error) {
			return PodDetail{Phase: "Pending", Conditions: []Condition{
				{Type: "PodScheduled", Status: "False", Reason: "Unschedulable", Message: "0/3 nodes are available"}},
				Events: []K8sEvent{{Type: "Warning", Reason: "FailedScheduling", Source: "default-scheduler",
					Message: "0/3 nodes are available: 1 Insufficient cpu", Count: 2, LastSeen: at(214)}},
				Object: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n"}, nil
		},
		FaultControl: ff,
		ClockControl: &FakeClock{Rate: 1},
	}
	wall := time.Date(2030, 6, 1, 0, 0, 0, 0, time.UTC)
	m := New(src, Options{Theme: theme, Now: func() time.Time { return wall }})
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	m.Fold(story()...)
	for _, e := range kubeStory() {
		m.log.addKube(e)
	}
	// The engine's clock reads 3 s into the story.
	m.anchorEng = at(3000)
	m.clampScroll()
	return m, src, rec
}

// recorder records what the fakes were asked to do.
type recorder struct {
	calls []string
	bps   []stages.Breakpoint
}

func (r *recorder) add(s string) { r.calls = append(r.calls, s) }

func (r *recorder) faults() *FakeFaults {
	return &FakeFaults{
		VariantsFunc: func(id stages.ID) []stages.Variant {
			if id == stages.Pull {
				return []stages.Variant{{Name: "not-found", Description: "the image does not exist"}, {Name: "unauthorized", Description: "no pull secret"}}
			}
			return nil
		},
		AddFunc: func(f stages.Fault) (stages.Fault, error) {
			f.ID = 7
			r.add("add " + f.String())
			return f, nil
		},
		RemoveFunc: func(id int) error { r.add("remove " + itoa(id)); return nil },
		ListFunc: func() []stages.Fault {
			return []stages.Fault{{ID: 3, Stage: stages.Schedule, Kind: stages.Fail, Scope: stages.Scope{Node: "node-2"}}}
		},
		SetBreakpointFunc: func(bp stages.Breakpoint) error {
			r.bps = append(r.bps, bp)
			r.add("break " + string(bp.Stage) + "@" + bp.Scope.String())
			return nil
		},
		ClearBreakpointFunc: func(bp stages.Breakpoint) error {
			r.add("clear " + string(bp.Stage) + "@" + bp.Scope.String())
			return nil
		},
		BreakpointsFunc: func() []stages.Breakpoint { return r.bps },
		HeldFunc: func() []stages.Held {
			return []stages.Held{{Pod: "default/web-7d9c5b8f4-qv4tn", Stage: stages.Sandbox}}
		},
		StepFunc:     func(pod string) error { r.add("step " + pod); return nil },
		ContinueFunc: func(pod string) error { r.add("continue " + pod); return nil },
	}
}

// press sends keys to m, running the commands they return (but not ticks).
func press(m *Model, keys ...string) {
	for _, k := range keys {
		_, cmd := m.Update(keyMsg(k))
		runCmd(m, cmd)
	}
}

func runCmd(m *Model, cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	msg := cmd()
	if b, ok := msg.(tea.BatchMsg); ok {
		for _, c := range b {
			runCmd(m, c)
		}
		return
	}
	if msg != nil {
		m.Update(msg)
	}
}

func keyMsg(k string) tea.KeyPressMsg {
	named := map[string]rune{"enter": tea.KeyEnter, "esc": tea.KeyEscape, "tab": tea.KeyTab, "up": tea.KeyUp,
		"down": tea.KeyDown, "left": tea.KeyLeft, "right": tea.KeyRight, "backspace": tea.KeyBackspace, "pgdown": tea.KeyPgDown}
	if r, ok := named[k]; ok {
		return tea.KeyPressMsg{Code: r}
	}
	if k == "space" {
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	}
	if k == "ctrl+c" {
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	}
	r := []rune(k)[0]
	return tea.KeyPressMsg{Code: r, Text: k}
}

func winSize(w, h int) tea.WindowSizeMsg { return tea.WindowSizeMsg{Width: w, Height: h} }
