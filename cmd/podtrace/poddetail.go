package main

import (
	"context"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/podtrace/podtrace/tui"
)

// podDetail reads a pod and builds what the detail pane shows of it: phase,
// node, IP, controlling owner, conditions, its containers waiting to
// (re)start (for the kubelet's back-offs), its Kubernetes Events and the
// stored object as YAML (without managedFields). Its Events read as
// kubectl reads them (attach's times and counts), oldest first; when they
// cannot be listed, Events is empty.
func podDetail(ctx context.Context, client kubernetes.Interface, namespace, name string) (tui.PodDetail, error) {
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
			d.Events = append(d.Events, kubeEvent(&evs.Items[i]))
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
