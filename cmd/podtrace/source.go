package main

import (
	"context"
	"embed"
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/apply"
	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
	"github.com/podtrace/podtrace/tui"
)

//go:embed workloads/*.yaml
var workloadFS embed.FS

// engineSource shows the embedded engine in the UI.
type engineSource struct {
	ctx     context.Context
	e       *engine.Engine
	applier *apply.Applier
	sub     *trace.Subscription

	kube chan tui.K8sEvent

	mu     sync.Mutex
	status tui.Status
}

func newEngineSource(ctx context.Context, e *engine.Engine) (*engineSource, error) {
	a, err := apply.New(e.AdminConfig())
	if err != nil {
		return nil, err
	}
	s := &engineSource{ctx: ctx, e: e, applier: a, sub: e.Hub.Subscribe(),
		status: tui.Status{NodesTotal: len(e.Kubelets), Etcd: "starting", Runtime: "simulated"},
		kube:   make(chan tui.K8sEvent, kubeEventBuffer)}
	go s.watchStatus()
	if err := s.watchKubeEvents(); err != nil {
		return nil, err
	}
	return s, nil
}

// kubeEventBuffer is how many Kubernetes Events wait for the UI's next frame
// before new ones are dropped (the informer must never block).
const kubeEventBuffer = 16384

// watchKubeEvents feeds the cluster's core/v1 Events, in every namespace,
// to the events pane through an informer.
func (s *engineSource) watchKubeEvents() error {
	f := informers.NewSharedInformerFactory(s.e.AdminClient(), 0)
	inf := f.Core().V1().Events().Informer()
	send := func(obj any) {
		ev, ok := obj.(*corev1.Event)
		if !ok {
			return
		}
		select {
		case s.kube <- kubeEvent(ev):
		default:
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: send,
		UpdateFunc: func(_, obj any) { send(obj) }}); err != nil {
		return fmt.Errorf("watch events: %w", err)
	}
	f.Start(s.ctx.Done())
	return nil
}

// kubeEvent is ev as the events pane shows it.
func kubeEvent(ev *corev1.Event) tui.K8sEvent {
	last := ev.LastTimestamp.Time
	if last.IsZero() {
		last = ev.EventTime.Time
	}
	if last.IsZero() {
		last = ev.FirstTimestamp.Time
	}
	src := ev.Source.Component
	if src == "" {
		src = ev.ReportingController
	}
	return tui.K8sEvent{Type: ev.Type, Reason: ev.Reason, Source: src, Message: ev.Message, Count: int(ev.Count),
		LastSeen: last, Namespace: ev.Namespace, Name: ev.Name,
		Object: strings.ToLower(ev.InvolvedObject.Kind) + "/" + ev.InvolvedObject.Name}
}

// KubeEvents delivers the cluster's Kubernetes Events.
func (s *engineSource) KubeEvents() <-chan tui.K8sEvent { return s.kube }

// watchStatus refreshes the header facts once a second, off the UI goroutine.
func (s *engineSource) watchStatus() {
	for {
		st := tui.Status{NodesTotal: len(s.e.Kubelets), Runtime: "simulated", Etcd: "healthy"}
		if err := s.e.Etcd.Healthy(s.ctx); err != nil {
			st.Etcd = "unhealthy"
		}
		if list, err := s.e.AdminClient().CoreV1().Nodes().List(s.ctx, metav1.ListOptions{ResourceVersion: "0"}); err == nil {
			st.NodesTotal = len(list.Items)
			for _, n := range list.Items {
				for _, c := range n.Status.Conditions {
					if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
						st.NodesReady++
					}
				}
			}
		}
		s.mu.Lock()
		s.status = st
		s.mu.Unlock()
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func (s *engineSource) Name() string                { return "embedded" }
func (s *engineSource) Events() <-chan stages.Event { return s.sub.C() }

func (s *engineSource) Status() tui.Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

func (s *engineSource) Workloads() []tui.Workload {
	entries, _ := workloadFS.ReadDir("workloads")
	var out []tui.Workload
	for _, ent := range entries {
		data, err := workloadFS.ReadFile(path.Join("workloads", ent.Name()))
		if err != nil {
			continue
		}
		desc := strings.TrimPrefix(strings.SplitN(string(data), "\n", 2)[0], "# ")
		out = append(out, tui.Workload{Name: strings.TrimSuffix(ent.Name(), ".yaml"), Description: desc, Manifest: data})
	}
	return out
}

func (s *engineSource) Apply(manifest []byte) error {
	_, err := s.applier.Apply(s.ctx, manifest, "manifest")
	return err
}

func (s *engineSource) DeletePod(namespace, name string) error {
	return s.e.AdminClient().CoreV1().Pods(namespace).Delete(s.ctx, name, metav1.DeleteOptions{})
}

func (s *engineSource) Scale(namespace, kind, name string, replicas int) error {
	patch := []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas))
	apps := s.e.AdminClient().AppsV1()
	var err error
	switch kind {
	case stages.KindDeployment:
		_, err = apps.Deployments(namespace).Patch(s.ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "scale")
	case stages.KindReplicaSet:
		_, err = apps.ReplicaSets(namespace).Patch(s.ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "scale")
	default:
		err = fmt.Errorf("%s %s has no replicas to scale", kind, name)
	}
	return err
}

func (s *engineSource) PodDetail(namespace, name string) (tui.PodDetail, error) {
	c := s.e.AdminClient().CoreV1()
	p, err := c.Pods(namespace).Get(s.ctx, name, metav1.GetOptions{})
	if err != nil {
		return tui.PodDetail{}, err
	}
	d := tui.PodDetail{Phase: string(p.Status.Phase), Node: p.Spec.NodeName, IP: p.Status.PodIP}
	if ref := metav1.GetControllerOf(p); ref != nil {
		d.Owner = ref.Kind + "/" + ref.Name
	}
	for _, c := range p.Status.Conditions {
		d.Conditions = append(d.Conditions, tui.Condition{Type: string(c.Type), Status: string(c.Status),
			Reason: c.Reason, Message: c.Message, LastTransition: c.LastTransitionTime.Time})
	}
	evs, err := c.Events(namespace).List(s.ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.uid", string(p.UID)).String()})
	if err == nil {
		sort.Slice(evs.Items, func(i, j int) bool { return evs.Items[i].LastTimestamp.Before(&evs.Items[j].LastTimestamp) })
		for _, ev := range evs.Items {
			d.Events = append(d.Events, tui.K8sEvent{Type: ev.Type, Reason: ev.Reason, Source: ev.Source.Component,
				Message: ev.Message, Count: int(ev.Count), LastSeen: ev.LastTimestamp.Time})
		}
	}
	p.ManagedFields = nil
	if y, err := yaml.Marshal(p); err == nil {
		d.Object = string(y)
	}
	return d, nil
}

func (s *engineSource) Faults() tui.FaultControl { return faultControl{t: s.e.Tracer} }
func (s *engineSource) Clock() tui.ClockControl  { return clockControl{s.e} }
