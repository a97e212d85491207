package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	nodeutil "k8s.io/kubernetes/pkg/util/node"
	"sigs.k8s.io/yaml"

	"github.com/podtrace/podtrace/engine/attach"
	"github.com/podtrace/podtrace/engine/cri"
	"github.com/podtrace/podtrace/tui"
)

// KubeEventBuffer is how many Kubernetes Events wait for the UI's next
// frame before new ones are dropped (an informer must never block).
const KubeEventBuffer = 16384

// KubeEvent is ev as the events pane shows it, with kubectl's times and
// count whichever recorder wrote it (legacy first/lastTimestamp and count,
// or events.k8s.io/v1's eventTime and series).
func KubeEvent(ev *corev1.Event) tui.K8sEvent {
	src := ev.Source.Component
	if src == "" {
		src = ev.ReportingController
	}
	return tui.K8sEvent{Type: ev.Type, Reason: ev.Reason, Source: src, Message: ev.Message, Count: attach.EventCount(ev),
		LastSeen: attach.EventTime(ev), FirstSeen: attach.EventFirstTime(ev), Namespace: ev.Namespace, Name: ev.Name,
		Object: strings.ToLower(ev.InvolvedObject.Kind) + "/" + ev.InvolvedObject.Name}
}

// WatchEvents registers an Event informer with f (start f after) that sends
// each Event, when created and when updated, to out, dropping it when out
// is full.
func WatchEvents(f informers.SharedInformerFactory, out chan<- tui.K8sEvent) error {
	send := func(obj any) {
		if ev, ok := obj.(*corev1.Event); ok {
			select {
			case out <- KubeEvent(ev):
			default:
			}
		}
	}
	if _, err := f.Core().V1().Events().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: send,
		UpdateFunc: func(_, obj any) { send(obj) }}); err != nil {
		return fmt.Errorf("watch events: %w", err)
	}
	return nil
}

// PodDetail reads a pod and builds what the detail pane shows of it: phase,
// node, IP, controlling owner, conditions, its containers waiting to
// (re)start (for the kubelet's back-offs), its Kubernetes Events and the
// stored object as YAML (without managedFields). Its Events read as
// kubectl reads them (attach's times and counts), oldest first; when they
// cannot be listed, Events is empty.
func PodDetail(ctx context.Context, client kubernetes.Interface, namespace, name string) (tui.PodDetail, error) {
	c := client.CoreV1()
	p, err := c.Pods(namespace).Get(ctx, name, metav1.GetOptions{})
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
	for _, st := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if w := st.State.Waiting; w != nil {
			cw := tui.ContainerWait{Container: st.Name, Reason: w.Reason, Message: w.Message}
			if t := st.LastTerminationState.Terminated; t != nil {
				cw.LastExit = t.FinishedAt.Time
			}
			d.Waiting = append(d.Waiting, cw)
		}
	}
	evs, err := c.Events(namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.uid", string(p.UID)).String()})
	if err == nil {
		for i := range evs.Items {
			d.Events = append(d.Events, KubeEvent(&evs.Items[i]))
		}
		// kubectl's order: by when each was last seen.
		sort.SliceStable(d.Events, func(i, j int) bool { return d.Events[i].LastSeen.Before(d.Events[j].LastSeen) })
	}
	p.ManagedFields = nil
	if y, err := yaml.Marshal(p); err == nil {
		d.Object = string(y)
	}
	return d, nil
}

// NodeCounter is the header's view of the Nodes, from an informer.
type NodeCounter struct {
	lister corelisters.NodeLister
	synced cache.InformerSynced
}

// NewNodeCounter registers a Node informer with f (start f after).
func NewNodeCounter(f informers.SharedInformerFactory) NodeCounter {
	n := f.Core().V1().Nodes()
	return NodeCounter{lister: n.Lister(), synced: n.Informer().HasSynced}
}

// Count sets st's nodes from the informer once it has synced; until then
// st keeps what it had.
func (c NodeCounter) Count(st *tui.Status) {
	if !c.synced() {
		return
	}
	list, _ := c.lister.List(labels.Everything())
	st.NodesTotal = len(list)
	for _, n := range list {
		countNode(st, n)
	}
}

// countNode adds n to the header's facts: whether it is Ready, and the
// container runtime it reports (kubectl get nodes -o wide's
// CONTAINER-RUNTIME without its version; podtrace's own is "simulated").
func countNode(st *tui.Status, n *corev1.Node) {
	if nodeutil.IsNodeReady(n) {
		st.NodesReady++
	}
	if st.Runtime == "" {
		name, _, _ := strings.Cut(n.Status.NodeInfo.ContainerRuntimeVersion, "://")
		if name == cri.SimulatedRuntimeName {
			name = "simulated"
		}
		st.Runtime = name
	}
}

// RefreshEachSecond sets *status to read() (under mu) now and once a
// second until ctx ends: a source's header facts, read off the UI
// goroutine.
func RefreshEachSecond(ctx context.Context, mu *sync.Mutex, status *tui.Status, read func() tui.Status) {
	for {
		st := read()
		mu.Lock()
		*status = st
		mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}
