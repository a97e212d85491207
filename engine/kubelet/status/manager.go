package status

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"
)

// Manager writes pod statuses to the API server. SetPodStatus only records
// the latest status; workers write it, so several changes that arrive while
// a write is in flight cost one more write, not several. A status equal to
// the one last written is not written again.
type Manager struct {
	client  kubernetes.Interface
	queue   workqueue.TypedRateLimitingInterface[types.UID]
	writes  atomic.Int64
	lastErr atomic.Value
	// conflicts counts writes refused for a stale resourceVersion.
	conflicts atomic.Int64

	mu      sync.Mutex
	pending map[types.UID]*entry
}

type entry struct {
	pod     *v1.Pod      // the pod as last seen (name, namespace, resourceVersion)
	status  v1.PodStatus // the status to write
	written *v1.PodStatus
	gone    bool
}

// NewManager returns a manager writing through client.
func NewManager(client kubernetes.Interface) *Manager {
	return &Manager{client: client, queue: workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[types.UID](100*time.Millisecond, 10*time.Second)), pending: map[types.UID]*entry{}}
}

// Start runs workers writers until ctx is done.
func (m *Manager) Start(ctx context.Context, workers int) {
	if workers < 1 {
		workers = 1
	}
	for i := 0; i < workers; i++ {
		go func() {
			for m.processNext(ctx) {
			}
		}()
	}
	go func() {
		<-ctx.Done()
		m.queue.ShutDown()
	}()
}

// Writes returns how many status writes reached the API server.
func (m *Manager) Writes() int64 { return m.writes.Load() }

// Conflicts returns how many writes were refused for a stale resourceVersion.
func (m *Manager) Conflicts() int64 { return m.conflicts.Load() }

// LastError returns the last failed write's error text, empty if none failed.
func (m *Manager) LastError() string {
	s, _ := m.lastErr.Load().(string)
	return s
}

// SetPodStatus records st as the status of pod, to be written soon.
func (m *Manager) SetPodStatus(pod *v1.Pod, st v1.PodStatus) {
	m.mu.Lock()
	e, ok := m.pending[pod.UID]
	if !ok {
		e = &entry{}
		m.pending[pod.UID] = e
	}
	e.pod, e.status = pod, *st.DeepCopy()
	Normalize(&e.status)
	m.mu.Unlock()
	m.queue.Add(pod.UID)
}

// Status returns the status last set for the pod.
func (m *Manager) Status(uid types.UID) (v1.PodStatus, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.pending[uid]
	if !ok {
		return v1.PodStatus{}, false
	}
	return *e.status.DeepCopy(), true
}

// Forget drops the pod; no further writes are made for it.
func (m *Manager) Forget(uid types.UID) {
	m.mu.Lock()
	if e, ok := m.pending[uid]; ok {
		e.gone = true
		delete(m.pending, uid)
	}
	m.mu.Unlock()
}

func (m *Manager) processNext(ctx context.Context) bool {
	uid, quit := m.queue.Get()
	if quit {
		return false
	}
	defer m.queue.Done(uid)
	m.mu.Lock()
	e, ok := m.pending[uid]
	if !ok || (e.written != nil && equality.Semantic.DeepEqual(*e.written, e.status)) {
		m.mu.Unlock()
		return true
	}
	pod := e.pod.DeepCopy()
	st := *e.status.DeepCopy()
	m.mu.Unlock()

	err := m.write(ctx, pod, st)
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case err == nil:
		m.queue.Forget(uid)
		if !e.gone {
			e.written = &st
		}
	case apierrors.IsNotFound(err) || e.gone:
		m.queue.Forget(uid)
	default:
		m.lastErr.Store(err.Error())
		m.queue.AddRateLimited(uid) // retried with back-off, as the kubelet's status manager does
	}
	return true
}

// write updates pods/status, retrying once from a fresh read on a conflict.
func (m *Manager) write(ctx context.Context, pod *v1.Pod, st v1.PodStatus) error {
	for attempt := 0; attempt < 3; attempt++ {
		p := pod.DeepCopy()
		// Keep conditions the kubelet does not own (PodScheduled, readiness gates).
		st.Conditions = mergeForeign(p.Status.Conditions, st.Conditions)
		p.Status = st
		m.writes.Add(1)
		updated, err := m.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		switch {
		case err == nil:
			m.mu.Lock()
			if e, ok := m.pending[p.UID]; ok && newer(updated.ResourceVersion, e.pod.ResourceVersion) {
				e.pod = updated
			}
			m.mu.Unlock()
			return nil
		case apierrors.IsNotFound(err):
			return err
		case apierrors.IsConflict(err):
			m.conflicts.Add(1)
			fresh, gerr := m.client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if gerr != nil {
				return fmt.Errorf("get pod %s/%s: %w", p.Namespace, p.Name, gerr)
			}
			if fresh.UID != pod.UID {
				return fmt.Errorf("pod %s/%s was replaced", p.Namespace, p.Name)
			}
			pod = fresh
		default:
			return fmt.Errorf("update status of pod %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	return fmt.Errorf("update status of pod %s/%s: too many conflicts", pod.Namespace, pod.Name)
}

// UpdatePod tells the manager of a newer pod object (from the informer), so
// writes start from its resourceVersion.
func (m *Manager) UpdatePod(pod *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.pending[pod.UID]; ok && newer(pod.ResourceVersion, e.pod.ResourceVersion) {
		e.pod = pod
	}
}

// newer reports whether resourceVersion a is after b; versions are etcd
// revisions, compared as numbers (an unparsable one counts as newer).
func newer(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	if errA != nil || errB != nil {
		return true
	}
	return x > y
}

// mergeForeign returns own plus every condition of current whose type the
// kubelet does not set.
func mergeForeign(current, own []v1.PodCondition) []v1.PodCondition {
	mine := map[v1.PodConditionType]bool{}
	for _, c := range own {
		mine[c.Type] = true
	}
	out := append([]v1.PodCondition(nil), own...)
	for _, c := range current {
		if !mine[c.Type] {
			out = append(out, c)
		}
	}
	return out
}

// Normalize truncates the status's times to whole seconds, the precision
// the API keeps, so that a status read back compares equal to the one
// written and is not written again.
func Normalize(st *v1.PodStatus) {
	trunc := func(t *metav1.Time) {
		if t != nil && !t.IsZero() {
			t.Time = t.Time.Truncate(time.Second)
		}
	}
	trunc(st.StartTime)
	for i := range st.Conditions {
		trunc(&st.Conditions[i].LastTransitionTime)
		trunc(&st.Conditions[i].LastProbeTime)
	}
	for _, list := range [][]v1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses} {
		for i := range list {
			for _, cs := range []*v1.ContainerState{&list[i].State, &list[i].LastTerminationState} {
				if cs.Running != nil {
					trunc(&cs.Running.StartedAt)
				}
				if cs.Terminated != nil {
					trunc(&cs.Terminated.StartedAt)
					trunc(&cs.Terminated.FinishedAt)
				}
			}
		}
	}
}
