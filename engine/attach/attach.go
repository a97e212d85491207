// Package attach rebuilds podtrace's stage events from what any Kubernetes
// cluster exposes through its API: client-go informers on pods, events,
// replicasets and deployments turn creationTimestamp and managedFields,
// pod conditions, container statuses and the upstream Event reasons into the
// same stages.Events the embedded engine emits. Stages invisible from
// outside (authn, authz, admission) come from the API server's audit log
// when one is given. Timestamps have one-second resolution (Resolution).
package attach

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/podtrace/podtrace/stages"
)

// Target narrows attach to one pod or one Deployment (with its ReplicaSets
// and pods). The zero Target shows everything in scope.
type Target struct {
	// Kind is stages.KindPod or stages.KindDeployment.
	Kind string
	Name string
}

// ParseTarget parses pod/NAME or deploy/NAME (also po/, pods/, deployment/, deployments/).
func ParseTarget(s string) (Target, error) {
	kind, name, ok := strings.Cut(s, "/")
	if !ok || name == "" || strings.Contains(name, "/") {
		return Target{}, fmt.Errorf("target %q: want pod/NAME or deploy/NAME", s)
	}
	switch strings.ToLower(kind) {
	case "pod", "pods", "po":
		return Target{Kind: stages.KindPod, Name: name}, nil
	case "deploy", "deployment", "deployments":
		return Target{Kind: stages.KindDeployment, Name: name}, nil
	}
	return Target{}, fmt.Errorf("target %q: unknown kind %q (want pod or deploy)", s, kind)
}

// String renders the target as it is written on the command line.
func (t Target) String() string {
	switch t.Kind {
	case stages.KindPod:
		return "pod/" + t.Name
	case stages.KindDeployment:
		return "deploy/" + t.Name
	}
	return ""
}

// Config configures a Watcher.
type Config struct {
	// Client reads the cluster; it needs list and watch on pods, events,
	// nodes, replicasets and deployments in Namespace.
	Client kubernetes.Interface
	// Namespace to watch; empty means every namespace.
	Namespace string
	// Target narrows the lanes to one pod or Deployment.
	Target Target
	// Emitter receives the stage events.
	Emitter stages.Emitter
	// Settle is how long an observation waits so that the facts that arrive
	// together (a status update and its Events) are put in stage order
	// (default 300ms).
	Settle time.Duration
	// Now is the wall clock (time.Now when nil); deletions are stamped with it.
	Now func() time.Time
}

// Watcher turns a cluster's objects into stage events.
type Watcher struct {
	cfg Config

	mu      sync.Mutex
	emitted map[types.UID]map[string]bool
	starts  map[types.UID]map[string]time.Time // stage|container → started time
	last    map[types.UID]time.Time            // last terminal event of the object
	pending map[string]pendingItem
	owners  map[string]string // "ns/rs" → owning Deployment name
	podRS   map[string]string // "ns/pod" → owning ReplicaSet name
	uids    map[string]types.UID
}

type pendingItem struct {
	item
	uid       types.UID
	fromEvent bool
	seen      time.Time
}

// New checks cfg and returns a Watcher ready to Start.
func New(cfg Config) (*Watcher, error) {
	if cfg.Client == nil {
		return nil, errors.New("attach: Client is required")
	}
	if cfg.Emitter == nil {
		return nil, errors.New("attach: Emitter is required")
	}
	if cfg.Settle == 0 {
		cfg.Settle = 300 * time.Millisecond
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Watcher{cfg: cfg, emitted: map[types.UID]map[string]bool{}, starts: map[types.UID]map[string]time.Time{},
		last: map[types.UID]time.Time{}, pending: map[string]pendingItem{}, owners: map[string]string{},
		podRS: map[string]string{}, uids: map[string]types.UID{}}, nil
}

// Start lists and watches the cluster and returns once the informers have
// synced (or with an error saying why the cluster cannot be read). Events
// flow to the Emitter until ctx is done.
func (w *Watcher) Start(ctx context.Context) error {
	if err := Check(ctx, w.cfg.Client, w.cfg.Namespace); err != nil {
		return err
	}
	if err := CheckTarget(ctx, w.cfg.Client, w.cfg.Namespace, w.cfg.Target); err != nil {
		return err
	}
	opts := []informers.SharedInformerOption{}
	if w.cfg.Namespace != "" {
		opts = append(opts, informers.WithNamespace(w.cfg.Namespace))
	}
	f := informers.NewSharedInformerFactoryWithOptions(w.cfg.Client, 0, opts...)
	deploys := f.Apps().V1().Deployments().Informer()
	rss := f.Apps().V1().ReplicaSets().Informer()
	pods := f.Core().V1().Pods().Informer()
	evs := f.Core().V1().Events().Informer()
	handlers := []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandlerFuncs
	}{
		{deploys, cache.ResourceEventHandlerFuncs{AddFunc: w.onDeployment, UpdateFunc: func(_, o any) { w.onDeployment(o) }}},
		{rss, cache.ResourceEventHandlerFuncs{AddFunc: w.onReplicaSet, UpdateFunc: func(_, o any) { w.onReplicaSet(o) }}},
		{pods, cache.ResourceEventHandlerFuncs{AddFunc: w.onPod, UpdateFunc: func(_, o any) { w.onPod(o) }, DeleteFunc: w.onPodDelete}},
		{evs, cache.ResourceEventHandlerFuncs{AddFunc: w.onEvent, UpdateFunc: func(_, o any) { w.onEvent(o) }}},
	}
	for _, h := range handlers {
		if _, err := h.inf.AddEventHandler(h.h); err != nil {
			return fmt.Errorf("watch: %w", err)
		}
	}
	f.Start(ctx.Done())
	// Owners first, so that a target's pods are known when their Events arrive.
	for _, group := range [][]cache.InformerSynced{{deploys.HasSynced, rss.HasSynced}, {pods.HasSynced}, {evs.HasSynced}} {
		if !cache.WaitForCacheSync(ctx.Done(), group...) {
			return fmt.Errorf("attach: %w", context.Cause(ctx))
		}
	}
	go w.flushLoop(ctx)
	return nil
}

// Check makes one cheap request so that an unreachable cluster or a wrong
// credential fails at once, in one line.
func Check(ctx context.Context, c kubernetes.Interface, namespace string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := c.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return fmt.Errorf("cannot read pods: %s", oneLine(err))
	}
	return nil
}

// ServerError is an error the API server returned, worded as kubectl
// prints it: Error from server (NotFound): deployments.apps "x" not found.
type ServerError struct{ Err error }

// Error words the error as kubectl prints it.
func (e *ServerError) Error() string {
	return "Error from server (" + string(apierrors.ReasonForError(e.Err)) + "): " + oneLine(e.Err)
}

// Unwrap returns the API server's error.
func (e *ServerError) Unwrap() error { return e.Err }

// CheckTarget fails with the API server's error, as kubectl words it, when
// the target pod or Deployment cannot be read (it does not exist, say).
func CheckTarget(ctx context.Context, c kubernetes.Interface, namespace string, t Target) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var err error
	switch t.Kind {
	case stages.KindPod:
		_, err = c.CoreV1().Pods(namespace).Get(ctx, t.Name, metav1.GetOptions{})
	case stages.KindDeployment:
		_, err = c.AppsV1().Deployments(namespace).Get(ctx, t.Name, metav1.GetOptions{})
	}
	if err != nil {
		if _, ok := err.(apierrors.APIStatus); ok {
			return &ServerError{Err: err}
		}
		return fmt.Errorf("cannot read %s: %s", t, oneLine(err))
	}
	return nil
}

// oneLine shortens client-go's errors to their readable part.
func oneLine(err error) string {
	s := err.Error()
	if i := strings.Index(s, "\n"); i >= 0 {
		s = s[:i]
	}
	return s
}

func (w *Watcher) onDeployment(obj any) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok || !w.wants(stages.KindDeployment, d.Namespace, d.Name) {
		return
	}
	w.add(d.UID, false, objectEvent(stages.KindDeployment, &d.ObjectMeta))
}

func (w *Watcher) onReplicaSet(obj any) {
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok {
		return
	}
	w.mu.Lock()
	if ref := metav1.GetControllerOfNoCopy(rs); ref != nil && ref.Kind == "Deployment" {
		w.owners[rs.Namespace+"/"+rs.Name] = ref.Name
	}
	w.uids[stages.KindReplicaSet+"/"+rs.Namespace+"/"+rs.Name] = rs.UID
	w.mu.Unlock()
	if !w.wants(stages.KindReplicaSet, rs.Namespace, rs.Name) {
		return
	}
	w.add(rs.UID, false, objectEvent(stages.KindReplicaSet, &rs.ObjectMeta))
}

func (w *Watcher) onPod(obj any) {
	p, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	w.mu.Lock()
	if ref := metav1.GetControllerOfNoCopy(p); ref != nil && ref.Kind == "ReplicaSet" {
		w.podRS[p.Namespace+"/"+p.Name] = ref.Name
	}
	w.uids[stages.KindPod+"/"+p.Namespace+"/"+p.Name] = p.UID
	w.mu.Unlock()
	if !w.wants(stages.KindPod, p.Namespace, p.Name) {
		return
	}
	w.add(p.UID, false, podItems(p))
}

func (w *Watcher) onPodDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	p, ok := obj.(*v1.Pod)
	if !ok || !w.wants(stages.KindPod, p.Namespace, p.Name) {
		return
	}
	e := stages.Event{Kind: stages.KindPod, Namespace: p.Namespace, Pod: p.Name, UID: string(p.UID), Node: p.Spec.NodeName,
		Stage: stages.Delete, Status: stages.Succeeded, Component: apiserver, Verb: "delete", Time: w.cfg.Now()}
	term := e
	term.Stage, term.Component, term.Verb = stages.Terminate, kubeletC, ""
	items := []item{{"delete|", e}}
	if p.Spec.NodeName != "" {
		items = append([]item{{"terminate|", term}}, items...)
	}
	w.add(p.UID, false, items)
}

func (w *Watcher) onEvent(obj any) {
	ev, ok := obj.(*v1.Event)
	if !ok {
		return
	}
	items := eventItems(ev)
	if len(items) == 0 {
		return
	}
	e := items[0].ev
	if !w.wants(e.Kind, e.Namespace, e.Pod) {
		return
	}
	uid := types.UID(e.UID)
	if uid == "" {
		w.mu.Lock()
		uid = w.uids[e.Kind+"/"+e.Namespace+"/"+e.Pod]
		w.mu.Unlock()
		if uid == "" {
			uid = types.UID(e.Kind + "/" + e.Namespace + "/" + e.Pod)
		}
		for i := range items {
			items[i].ev.UID = string(uid)
		}
	}
	w.add(uid, true, items)
}

// wants reports whether the object belongs to the target.
func (w *Watcher) wants(kind, ns, name string) bool {
	t := w.cfg.Target
	if t.Kind == "" {
		return true
	}
	if w.cfg.Namespace != "" && ns != w.cfg.Namespace {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch t.Kind {
	case stages.KindPod:
		return kind == stages.KindPod && name == t.Name
	case stages.KindDeployment:
		switch kind {
		case stages.KindDeployment:
			return name == t.Name
		case stages.KindReplicaSet:
			return w.owners[ns+"/"+name] == t.Name
		case stages.KindPod:
			rs, ok := w.podRS[ns+"/"+name]
			return ok && w.owners[ns+"/"+rs] == t.Name
		}
	}
	return false
}

// add queues items not yet emitted. An Event's version of a fact replaces
// the status-derived one while both wait (it carries the reason and
// message), at the earlier of their times: a component records its Event
// after the fact, and on a busy machine the scheduler's Scheduled Event
// can carry a later second than the kubelet's status.startTime, which the
// binding came before.
func (w *Watcher) add(uid types.UID, fromEvent bool, items []item) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, it := range items {
		if it.ev.Time.IsZero() || w.emitted[uid][it.key] {
			continue
		}
		k := string(uid) + "\x00" + it.key
		p := pendingItem{item: it, uid: uid, fromEvent: fromEvent, seen: now}
		if old, ok := w.pending[k]; ok {
			if old.fromEvent == fromEvent {
				continue
			}
			if old.fromEvent {
				p, old = old, p
			}
			if old.ev.Time.Before(p.ev.Time) {
				p.ev.Time = old.ev.Time
			}
		}
		w.pending[k] = p
	}
}

func (w *Watcher) flushLoop(ctx context.Context) {
	t := time.NewTicker(w.cfg.Settle / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.Flush(time.Now().Add(-w.cfg.Settle))
		}
	}
}

// Flush emits the queued observations of the objects quiet since cutoff,
// in time order (to the second) and then stage order.
func (w *Watcher) Flush(cutoff time.Time) {
	w.mu.Lock()
	// An object's observations wait until none has arrived for Settle (or
	// the oldest has waited five times that), so the facts that arrive
	// together are put in order together.
	newest, oldest := map[types.UID]time.Time{}, map[types.UID]time.Time{}
	for _, p := range w.pending {
		if p.seen.After(newest[p.uid]) {
			newest[p.uid] = p.seen
		}
		if o, ok := oldest[p.uid]; !ok || p.seen.Before(o) {
			oldest[p.uid] = p.seen
		}
	}
	starved := cutoff.Add(-4 * w.cfg.Settle)
	var ready []pendingItem
	for k, p := range w.pending {
		if !newest[p.uid].After(cutoff) || !oldest[p.uid].After(starved) {
			ready = append(ready, p)
			delete(w.pending, k)
		}
	}
	sort.SliceStable(ready, func(i, j int) bool {
		a, b := ready[i], ready[j]
		ta, tb := sortTime(a.ev), sortTime(b.ev)
		if !ta.Equal(tb) {
			return ta.Before(tb)
		}
		if a.ev.Stage != b.ev.Stage {
			return a.ev.Stage.Index() < b.ev.Stage.Index()
		}
		if na, nb := max(a.ev.Attempt, 1), max(b.ev.Attempt, 1); na != nb {
			return na < nb
		}
		if ra, rb := statusRank[a.ev.Status], statusRank[b.ev.Status]; ra != rb {
			return ra < rb
		}
		if ra, rb := reasonRank[a.ev.Reason], reasonRank[b.ev.Reason]; ra != rb {
			return ra < rb
		}
		return a.key < b.key
	})
	out := make([]stages.Event, 0, len(ready))
	for _, p := range ready {
		if w.emitted[p.uid] == nil {
			w.emitted[p.uid] = map[string]bool{}
			w.starts[p.uid] = map[string]time.Time{}
		}
		if w.emitted[p.uid][p.key] {
			continue
		}
		w.emitted[p.uid][p.key] = true
		out = append(out, w.timed(p.uid, p.ev))
	}
	w.mu.Unlock()
	for _, e := range out {
		w.cfg.Emitter.Emit(e)
	}
}

// timed fills in a terminal event's duration: from its own start when one
// was seen, else from the object's previous terminal event, whole seconds.
func (w *Watcher) timed(uid types.UID, e stages.Event) stages.Event {
	sk := string(e.Stage) + "|" + e.Container
	switch {
	case e.Status == stages.Started:
		w.starts[uid][sk] = e.Time
		return e
	case e.Status.Terminal() && e.DurationMs == 0:
		from, ok := w.starts[uid][sk]
		if !ok {
			from, ok = w.last[uid]
		}
		if ok && e.Time.After(from) {
			e.DurationMs = float64(e.Time.Sub(from).Truncate(time.Millisecond)) / float64(time.Millisecond)
		}
	}
	if e.Status.Terminal() && e.Time.After(w.last[uid]) {
		w.last[uid] = e.Time
	}
	return e
}

// sortTime is when an event's step began, to the second: API stages from
// the audit log end after the object was persisted, but began before.
func sortTime(e stages.Event) time.Time {
	t := e.Time
	if e.Stage.Before(stages.Persist) && e.DurationMs > 0 {
		t = t.Add(-time.Duration(e.DurationMs * float64(time.Millisecond)))
	}
	return t.Truncate(Resolution)
}

// Within one second and stage: an attempt starts, fails (Failed before the
// BackOff that follows it), then succeeds.
var (
	statusRank = map[stages.Status]int{stages.Started: 0, stages.Waiting: 1, stages.Retrying: 2, stages.Failed: 2, stages.Succeeded: 3}
	reasonRank = map[string]int{"Failed": 0, "BackOff": 1}
)
