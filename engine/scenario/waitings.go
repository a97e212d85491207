package scenario

import (
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// waitings records every container Waiting state that the pods of one
// namespace pass through, as a watch delivers them. Since Kubernetes 1.33
// the kubelet requeues a crash-looping pod at its back-off's expiry, so the
// status reads CrashLoopBackOff only from that sync's status write until the
// restart it starts shows up (about a second); a poll of the pod list can
// miss it, every write on the watch cannot.
type waitings struct {
	mu   sync.Mutex
	seen []waiting // in watch order
}

// waiting is one container's Waiting state in one status a pod had.
type waiting struct {
	pod, container string
	corev1.ContainerStateWaiting
}

func (w waiting) String() string {
	return fmt.Sprintf("pod %s container %s waiting: %s %s", w.pod, w.container, w.Reason, w.Message)
}

// watchWaitings records the Waiting states of ns's pods until ctx ends; it
// returns once the watch has listed the pods.
func watchWaitings(ctx context.Context, c kubernetes.Interface, ns string) (*waitings, error) {
	w := &waitings{}
	f := informers.NewSharedInformerFactoryWithOptions(c, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().Pods().Informer()
	record := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok {
			w.add(p)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    record,
		UpdateFunc: func(_, obj any) { record(obj) },
	}); err != nil {
		return nil, err
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("watching the pods of namespace %s: %w", ns, context.Cause(ctx))
	}
	return w, nil
}

func (w *waitings) add(p *corev1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, st := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if wt := st.State.Waiting; wt != nil && wt.Reason != "" {
			w.seen = append(w.seen, waiting{p.Name, st.Name, *wt})
		}
	}
}

// find returns the first recorded Waiting state with this reason whose
// message contains message, or "".
func (w *waitings) find(reason, message string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.seen {
		if s.Reason == reason && strings.Contains(s.Message, message) {
			return s.String()
		}
	}
	return ""
}
