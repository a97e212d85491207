// Package replicaset is podtrace's ReplicaSet controller: it keeps the
// number of pods of each ReplicaSet at spec.replicas, creating them from the
// template in slow-start batches and deleting the surplus, and reports each
// pod it creates as a reconcile stage event. It follows
// pkg/controller/replicaset of Kubernetes 1.36 in behaviour and wording.
package replicaset

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	apps "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/podtrace/podtrace/engine/controllers/controllerutil"
	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

// Component is the controller's event source and stage component.
const Component = "replicaset-controller"

// DefaultUser is the controller's identity (docs/architecture.md).
const DefaultUser = "system:serviceaccount:kube-system:replicaset-controller"

// BurstReplicas caps the pods created or deleted in one sync, as upstream.
const BurstReplicas = 500

var controllerKind = apps.SchemeGroupVersion.WithKind("ReplicaSet")

// Config configures a Controller.
type Config struct {
	// Client talks to the API server as the replicaset-controller.
	Client kubernetes.Interface
	// Clock drives requeues, expectations and timestamps; real time when nil.
	Clock clock.WithTicker
	// Tracer receives reconcile stage events and gates pod creation; may be nil.
	Tracer *trace.Tracer
	// Workers is the number of ReplicaSets synced at once; 5 when zero.
	Workers int
	// User names the controller in injected forbidden errors; DefaultUser when empty.
	User string
	// RateLimiter paces retries of a failing ReplicaSet; client-go's default
	// controller rate limiter (5ms doubling to 1000s) when nil.
	RateLimiter workqueue.TypedRateLimiter[string]
}

// Controller is the ReplicaSet controller.
type Controller struct {
	cfg          Config
	clock        clock.WithTicker
	expectations *controllerutil.Expectations
	limiter      workqueue.TypedRateLimiter[string]
	queue        workqueue.TypedRateLimitingInterface[string]
	recorder     record.EventRecorder
	rsLister     appslisters.ReplicaSetLister
	podLister    corelisters.PodLister
	synced       []cache.InformerSynced

	mu       sync.Mutex
	failures map[string][]failure // failed creates of the current sync, by RS key
}

// failure is one failed pod creation, reported once its retry time is known.
type failure struct {
	ref     trace.Ref
	start   time.Time
	message string
	attempt int
}

// New checks cfg and returns a controller; Start runs it.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil {
		return nil, errors.New("replicaset controller: no client")
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
	c := &Controller{
		cfg:          cfg,
		clock:        cfg.Clock,
		expectations: controllerutil.NewExpectations(cfg.Clock),
		limiter:      cfg.RateLimiter,
		failures:     map[string][]failure{},
	}
	c.queue = workqueue.NewTypedRateLimitingQueueWithConfig(c.limiter,
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "replicaset", Clock: cfg.Clock})
	return c, nil
}

// Start starts the informers and the workers and returns; they stop when
// ctx is done. Workers begin once the caches have synced.
func (c *Controller) Start(ctx context.Context) error {
	factory := informers.NewSharedInformerFactory(c.cfg.Client, 0)
	rsInformer := factory.Apps().V1().ReplicaSets()
	podInformer := factory.Core().V1().Pods()
	c.rsLister, c.podLister = rsInformer.Lister(), podInformer.Lister()
	if _, err := rsInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueRS,
		UpdateFunc: func(_, cur interface{}) { c.enqueueRS(cur) },
		DeleteFunc: c.deleteRS,
	}); err != nil {
		return fmt.Errorf("replicaset controller: watch replicasets: %w", err)
	}
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addPod,
		UpdateFunc: c.updatePod,
		DeleteFunc: c.deletePod,
	}); err != nil {
		return fmt.Errorf("replicaset controller: watch pods: %w", err)
	}
	c.recorder = controllerutil.NewRecorder(ctx, c.cfg.Client, Component, c.clock)
	c.synced = []cache.InformerSynced{rsInformer.Informer().HasSynced, podInformer.Informer().HasSynced}
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
	err := c.syncReplicaSet(ctx, key)
	failed := c.takeFailures(key)
	if err == nil {
		c.queue.Forget(key)
		return true
	}
	if ctx.Err() != nil {
		return false
	}
	// AddRateLimited, spelled out so that the retry time is known.
	delay := c.limiter.When(key)
	c.queue.AddAfter(key, delay)
	next := c.clock.Now().Add(delay)
	for _, f := range failed {
		c.cfg.Tracer.BeginAt(f.ref, stages.Reconcile, Component, f.start).
			With(func(e *stages.Event) { e.Attempt = f.attempt }).
			Retry(controllerutil.FailedCreatePodReason, f.message, next)
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

func (c *Controller) enqueueRS(obj interface{}) {
	if rs, ok := obj.(*apps.ReplicaSet); ok {
		c.queue.Add(keyOf(rs))
	}
}

func (c *Controller) deleteRS(obj interface{}) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	rs, ok := obj.(*apps.ReplicaSet)
	if !ok {
		return
	}
	c.expectations.Delete(keyOf(rs))
	c.queue.Add(keyOf(rs))
}

// resolveControllerRef returns the ReplicaSet ref names, if it is still the same object.
func (c *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *apps.ReplicaSet {
	if ref.Kind != controllerKind.Kind {
		return nil
	}
	rs, err := c.rsLister.ReplicaSets(namespace).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		return nil
	}
	return rs
}

func (c *Controller) addPod(obj interface{}) {
	pod := obj.(*v1.Pod)
	if pod.DeletionTimestamp != nil {
		c.deletePod(pod)
		return
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		if rs := c.resolveControllerRef(pod.Namespace, ref); rs != nil {
			c.expectations.CreationObserved(keyOf(rs))
			c.queue.Add(keyOf(rs))
		}
		return
	}
	// An orphan: wake every ReplicaSet that might adopt it.
	c.enqueueMatching(pod)
}

// enqueueMatching enqueues the ReplicaSets whose selector matches the orphan pod.
func (c *Controller) enqueueMatching(pod *v1.Pod) {
	rss, err := c.rsLister.ReplicaSets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, rs := range rss {
		sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		c.queue.Add(keyOf(rs))
	}
}

func (c *Controller) updatePod(old, cur interface{}) {
	oldPod, curPod := old.(*v1.Pod), cur.(*v1.Pod)
	if curPod.ResourceVersion == oldPod.ResourceVersion {
		return
	}
	if curPod.DeletionTimestamp != nil {
		c.deletePod(curPod)
		if !reflect.DeepEqual(curPod.Labels, oldPod.Labels) {
			c.deletePod(oldPod)
		}
		return
	}
	curRef, oldRef := metav1.GetControllerOf(curPod), metav1.GetControllerOf(oldPod)
	if !reflect.DeepEqual(curRef, oldRef) && oldRef != nil {
		if rs := c.resolveControllerRef(oldPod.Namespace, oldRef); rs != nil {
			c.queue.Add(keyOf(rs))
		}
	}
	if curRef == nil {
		if !reflect.DeepEqual(curPod.Labels, oldPod.Labels) || !reflect.DeepEqual(curRef, oldRef) {
			c.enqueueMatching(curPod)
		}
		return
	}
	rs := c.resolveControllerRef(curPod.Namespace, curRef)
	if rs == nil {
		return
	}
	c.queue.Add(keyOf(rs))
	if !controllerutil.IsPodReady(oldPod) && controllerutil.IsPodReady(curPod) && rs.Spec.MinReadySeconds > 0 {
		c.queue.AddAfter(keyOf(rs), time.Duration(rs.Spec.MinReadySeconds)*time.Second)
	}
}

func (c *Controller) deletePod(obj interface{}) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return
	}
	if rs := c.resolveControllerRef(pod.Namespace, ref); rs != nil {
		c.expectations.DeletionObserved(keyOf(rs), controllerutil.PodKey(pod))
		c.queue.Add(keyOf(rs))
	}
}

// uid returns the object's UID as a string.
func uid(u types.UID) string { return string(u) }
