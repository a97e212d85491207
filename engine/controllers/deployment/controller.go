// Package deployment is podtrace's Deployment controller: it creates a
// ReplicaSet per pod template (named <deployment>-<pod-template-hash>),
// scales new and old ReplicaSets by the RollingUpdate or Recreate strategy,
// and keeps the Deployment's status and Available/Progressing conditions. It
// reports each ReplicaSet it creates or scales as a reconcile stage event and
// follows pkg/controller/deployment of Kubernetes 1.36 in behaviour and wording.
package deployment

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	apps "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"

	"github.com/podtrace/podtrace/engine/controllers/controllerutil"
)

// Component is the controller's event source and stage component.
const Component = "deployment-controller"

// DefaultUser is the controller's identity (docs/architecture.md).
const DefaultUser = "system:serviceaccount:kube-system:deployment-controller"

var controllerKind = apps.SchemeGroupVersion.WithKind("Deployment")

// Config configures a Controller.
type Config struct {
	// Client talks to the API server as the deployment-controller.
	Client kubernetes.Interface
	// Clock drives requeues, conditions and progress deadlines; real time when nil.
	Clock clock.WithTicker
	// Tracer receives reconcile stage events and gates ReplicaSet writes; may be nil.
	Tracer *trace.Tracer
	// Workers is the number of Deployments synced at once; 5 when zero.
	Workers int
	// User names the controller in injected forbidden errors; DefaultUser when empty.
	User string
	// RateLimiter paces retries of a failing Deployment; client-go's default
	// controller rate limiter when nil.
	RateLimiter workqueue.TypedRateLimiter[string]
}

// Controller is the Deployment controller.
type Controller struct {
	cfg       Config
	clock     clock.WithTicker
	limiter   workqueue.TypedRateLimiter[string]
	queue     workqueue.TypedRateLimitingInterface[string]
	recorder  record.EventRecorder
	dLister   appslisters.DeploymentLister
	rsLister  appslisters.ReplicaSetLister
	podLister corelisters.PodLister
	synced    []cache.InformerSynced

	mu       sync.Mutex
	failures map[string][]failure
}

// failure is one failed ReplicaSet write, reported once its retry time is known.
type failure struct {
	ref             trace.Ref
	start           time.Time
	reason, message string
	attempt         int
}

// New checks cfg and returns a controller; Start runs it.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil {
		return nil, errors.New("deployment controller: no client")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 5
	}
	if cfg.User == "" {
		cfg.User = DefaultUser
	}
	if cfg.RateLimiter == nil {
		cfg.RateLimiter = workqueue.DefaultTypedControllerRateLimiter[string]()
	}
	c := &Controller{cfg: cfg, clock: cfg.Clock, limiter: cfg.RateLimiter, failures: map[string][]failure{}}
	c.queue = workqueue.NewTypedRateLimitingQueueWithConfig(c.limiter,
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "deployment", Clock: cfg.Clock})
	return c, nil
}

// Start starts the informers and the workers and returns; they stop when
// ctx is done. Workers begin once the caches have synced.
func (c *Controller) Start(ctx context.Context) error {
	factory := informers.NewSharedInformerFactory(c.cfg.Client, 0)
	dInf, rsInf, podInf := factory.Apps().V1().Deployments(), factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods()
	c.dLister, c.rsLister, c.podLister = dInf.Lister(), rsInf.Lister(), podInf.Lister()
	handlers := []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandlerFuncs
	}{
		{dInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    c.enqueueDeployment,
			UpdateFunc: func(_, cur interface{}) { c.enqueueDeployment(cur) },
			DeleteFunc: c.enqueueDeployment,
		}},
		{rsInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    c.enqueueOwnerOfRS,
			UpdateFunc: c.updateReplicaSet,
			DeleteFunc: c.enqueueOwnerOfRS,
		}},
		{podInf.Informer(), cache.ResourceEventHandlerFuncs{DeleteFunc: c.deletePod}},
	}
	for _, h := range handlers {
		if _, err := h.inf.AddEventHandler(h.h); err != nil {
			return fmt.Errorf("deployment controller: add event handler: %w", err)
		}
		c.synced = append(c.synced, h.inf.HasSynced)
	}
	c.recorder = controllerutil.NewRecorder(ctx, c.cfg.Client, Component, c.clock)
	factory.Start(ctx.Done())
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
		factory.Shutdown()
	}()
	go func() {
		if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
			return
		}
		for i := 0; i < c.cfg.Workers; i++ {
			go c.worker(ctx)
		}
	}()
	return nil
}

// HasSynced reports whether the informers' caches are filled.
func (c *Controller) HasSynced() bool {
	for _, s := range c.synced {
		if !s() {
			return false
		}
	}
	return len(c.synced) > 0
}

func (c *Controller) worker(ctx context.Context) {
	for c.processNextWorkItem(ctx) {
	}
}

func (c *Controller) processNextWorkItem(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	err := c.syncDeployment(ctx, key)
	failed := c.takeFailures(key)
	if err == nil {
		c.queue.Forget(key)
		return true
	}
	if ctx.Err() != nil {
		return false
	}
	// Upstream drops a key after 15 retries and relies on resyncs; podtrace
	// has no resync, so it keeps retrying with the rate limiter's back-off.
	delay := c.limiter.When(key)
	c.queue.AddAfter(key, delay)
	next := c.clock.Now().Add(delay)
	for _, f := range failed {
		c.cfg.Tracer.BeginAt(f.ref, stages.Reconcile, Component, f.start).
			With(func(e *stages.Event) { e.Attempt = f.attempt }).
			Retry(f.reason, f.message, next)
	}
	return true
}

func (c *Controller) addFailure(key string, f failure) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failures[key] = append(c.failures[key], f)
}

func (c *Controller) takeFailures(key string) []failure {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.failures[key]
	delete(c.failures, key)
	return f
}

func keyOf(obj metav1.Object) string { return obj.GetNamespace() + "/" + obj.GetName() }

func (c *Controller) enqueueDeployment(obj interface{}) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if d, ok := obj.(*apps.Deployment); ok {
		c.queue.Add(keyOf(d))
	}
}

// resolveControllerRef returns the Deployment ref names, if it is still the same object.
func (c *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *apps.Deployment {
	if ref == nil || ref.Kind != controllerKind.Kind {
		return nil
	}
	d, err := c.dLister.Deployments(namespace).Get(ref.Name)
	if err != nil || d.UID != ref.UID {
		return nil
	}
	return d
}

func (c *Controller) enqueueOwnerOfRS(obj interface{}) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	rs, ok := obj.(*apps.ReplicaSet)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOf(rs); ref != nil {
		if d := c.resolveControllerRef(rs.Namespace, ref); d != nil {
			c.queue.Add(keyOf(d))
		}
		return
	}
	// An orphan: wake every Deployment that might adopt it.
	ds, err := c.dLister.Deployments(rs.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, d := range ds {
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err == nil && !sel.Empty() && sel.Matches(labels.Set(rs.Labels)) {
			c.queue.Add(keyOf(d))
		}
	}
}

func (c *Controller) updateReplicaSet(old, cur interface{}) {
	oldRS, curRS := old.(*apps.ReplicaSet), cur.(*apps.ReplicaSet)
	if oldRS.ResourceVersion == curRS.ResourceVersion {
		return
	}
	oldRef, curRef := metav1.GetControllerOf(oldRS), metav1.GetControllerOf(curRS)
	if oldRef != nil && (curRef == nil || oldRef.UID != curRef.UID) {
		if d := c.resolveControllerRef(oldRS.Namespace, oldRef); d != nil {
			c.queue.Add(keyOf(d))
		}
	}
	c.enqueueOwnerOfRS(curRS)
}

// deletePod wakes a Recreate deployment once its old pods are all gone.
func (c *Controller) deletePod(obj interface{}) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != "ReplicaSet" {
		return
	}
	rs, err := c.rsLister.ReplicaSets(pod.Namespace).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		return
	}
	d := c.resolveControllerRef(rs.Namespace, metav1.GetControllerOf(rs))
	if d == nil || d.Spec.Strategy.Type != apps.RecreateDeploymentStrategyType {
		return
	}
	all, err := c.rsLister.ReplicaSets(d.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	var rsList []*apps.ReplicaSet
	for _, rs := range all {
		if metav1.IsControlledBy(rs, d) {
			rsList = append(rsList, rs)
		}
	}
	podMap := c.podMapFor(rsList)
	n := 0
	for _, pods := range podMap {
		n += len(pods)
	}
	if n == 0 {
		c.queue.Add(keyOf(d))
	}
}

// replicaSetsFor returns the replica sets d owns, after adopting matching
// orphans and releasing the ones that no longer match its selector, as upstream.
func (c *Controller) replicaSetsFor(ctx context.Context, d *apps.Deployment) ([]*apps.ReplicaSet, error) {
	all, err := c.rsLister.ReplicaSets(d.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("deployment %s/%s has invalid label selector: %v", d.Namespace, d.Name, err)
	}
	m := &controllerutil.Claimer{
		Controller: d,
		Kind:       controllerKind,
		CanAdopt: controllerutil.RecheckDeletionTimestamp(func(ctx context.Context) (metav1.Object, error) {
			fresh, err := c.cfg.Client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			if fresh.UID != d.UID {
				return nil, fmt.Errorf("original Deployment %v/%v is gone: got uid %v, wanted %v", d.Namespace, d.Name, fresh.UID, d.UID)
			}
			return fresh, nil
		}),
		Patch: func(ctx context.Context, namespace, name string, patch []byte) error {
			_, err := c.cfg.Client.AppsV1().ReplicaSets(namespace).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
			return err
		},
	}
	match := func(o metav1.Object) bool { return sel.Matches(labels.Set(o.GetLabels())) }
	var out []*apps.ReplicaSet
	var errs []error
	for _, rs := range all {
		ok, err := m.Claim(ctx, rs, match)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			out = append(out, rs.DeepCopy())
		}
	}
	return out, utilerrors.NewAggregate(errs)
}

func (c *Controller) podMapFor(rsList []*apps.ReplicaSet) map[string][]*v1.Pod {
	m := make(map[string][]*v1.Pod, len(rsList))
	for _, rs := range rsList {
		pods, _ := c.podLister.Pods(rs.Namespace).List(labels.Everything())
		m[string(rs.UID)] = nil
		for _, p := range pods {
			if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == rs.UID {
				m[string(rs.UID)] = append(m[string(rs.UID)], p)
			}
		}
	}
	return m
}

func (c *Controller) syncDeployment(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	deployment, err := c.dLister.Deployments(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	d := deployment.DeepCopy()
	if reflect.DeepEqual(d.Spec.Selector, &metav1.LabelSelector{}) {
		c.recorder.Eventf(d, v1.EventTypeWarning, "SelectingAll", "This deployment is selecting all pods. A non-empty selector is required.")
		if d.Status.ObservedGeneration < d.Generation {
			d.Status.ObservedGeneration = d.Generation
			_, _ = c.cfg.Client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
		}
		return nil
	}
	rsList, err := c.replicaSetsFor(ctx, d)
	if err != nil {
		return err
	}
	if d.DeletionTimestamp != nil {
		return c.syncStatusOnly(ctx, d, rsList)
	}
	if err := c.checkPausedConditions(ctx, d); err != nil {
		return err
	}
	if d.Spec.Paused {
		return c.sync(ctx, d, rsList)
	}
	scaling, err := c.isScalingEvent(ctx, d, rsList)
	if err != nil {
		return err
	}
	if scaling {
		return c.sync(ctx, d, rsList)
	}
	switch d.Spec.Strategy.Type {
	case apps.RecreateDeploymentStrategyType:
		return c.rolloutRecreate(ctx, d, rsList, c.podMapFor(rsList))
	case apps.RollingUpdateDeploymentStrategyType:
		return c.rolloutRolling(ctx, d, rsList)
	}
	return fmt.Errorf("unexpected deployment strategy type: %s", d.Spec.Strategy.Type)
}
