// Package replicaset is podtrace's ReplicaSet controller: it keeps the
// number of pods of each ReplicaSet at spec.replicas, creating them from the
// template in slow-start batches and deleting the surplus, and reports each
// pod it creates as a reconcile stage event. It follows
// pkg/controller/replicaset of Kubernetes 1.36 in behaviour and wording.
package replicaset

import (
	"context"
	"fmt"
	"reflect"
	"time"

	apps "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/podtrace/podtrace/engine/controllers/controllerutil"
)

// Component is the controller's event source and stage component.
const Component = "replicaset-controller"

// DefaultUser is the controller's identity (docs/architecture.md).
const DefaultUser = "system:serviceaccount:kube-system:replicaset-controller"

// BurstReplicas caps the pods created or deleted in one sync, as upstream.
const BurstReplicas = 500

var controllerKind = apps.SchemeGroupVersion.WithKind("ReplicaSet")

// Config configures a Controller, with the fields every workload controller
// has. Here Client talks as the replicaset-controller (User is DefaultUser
// when empty), Clock also times expectations, the Tracer gates pod creation,
// and Workers and RateLimiter count and pace ReplicaSets.
type Config = controllerutil.Config

// Controller is the ReplicaSet controller.
type Controller struct {
	cfg          Config
	clock        clock.WithTicker
	expectations *controllerutil.Expectations
	queue        *controllerutil.Queue
	recorder     record.EventRecorder
	rsLister     appslisters.ReplicaSetLister
	podLister    corelisters.PodLister
}

// New checks cfg and returns a controller; Start runs it.
func New(cfg Config) (*Controller, error) {
	cfg, err := cfg.WithDefaults(DefaultUser)
	if err != nil {
		return nil, fmt.Errorf("replicaset controller: %w", err)
	}
	return &Controller{
		cfg:          cfg,
		clock:        cfg.Clock,
		expectations: controllerutil.NewExpectations(cfg.Clock),
		queue:        cfg.NewQueue("replicaset", Component),
	}, nil
}

// Start starts the informers and the workers and returns; they stop when
// ctx is done. Workers begin once the caches have synced.
func (c *Controller) Start(ctx context.Context) error {
	factory := c.cfg.InformerFactory()
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
	c.queue.Start(ctx, factory, c.cfg.Workers, c.syncReplicaSet,
		rsInformer.Informer().HasSynced, podInformer.Informer().HasSynced)
	return nil
}

// HasSynced reports whether the informers' caches are filled.
func (c *Controller) HasSynced() bool { return c.queue.HasSynced() }

func (c *Controller) enqueueRS(obj interface{}) {
	if rs, ok := obj.(*apps.ReplicaSet); ok {
		c.queue.Enqueue(rs)
	}
}

func (c *Controller) deleteRS(obj interface{}) {
	rs, ok := controllerutil.Unwrap(obj).(*apps.ReplicaSet)
	if !ok {
		return
	}
	c.expectations.Delete(controllerutil.KeyOf(rs))
	c.queue.Enqueue(rs)
}

// resolveControllerRef returns the ReplicaSet ref names, if it is still the same object.
func (c *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *apps.ReplicaSet {
	return controllerutil.ResolveControllerRef(ref, controllerKind.Kind, c.rsLister.ReplicaSets(namespace).Get)
}

func (c *Controller) addPod(obj interface{}) {
	pod := obj.(*v1.Pod)
	if pod.DeletionTimestamp != nil {
		c.deletePod(pod)
		return
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		if rs := c.resolveControllerRef(pod.Namespace, ref); rs != nil {
			c.expectations.CreationObserved(controllerutil.KeyOf(rs))
			c.queue.Enqueue(rs)
		}
		return
	}
	// An orphan: wake every ReplicaSet that might adopt it.
	c.enqueueMatching(pod)
}

// enqueueMatching enqueues the ReplicaSets whose selector matches the orphan pod.
func (c *Controller) enqueueMatching(pod *v1.Pod) {
	controllerutil.EnqueueSelecting(c.queue, c.rsLister.ReplicaSets(pod.Namespace).List,
		func(rs *apps.ReplicaSet) *metav1.LabelSelector { return rs.Spec.Selector }, pod.Labels)
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
			c.queue.Enqueue(rs)
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
	c.queue.Enqueue(rs)
	if !controllerutil.IsPodReady(oldPod) && controllerutil.IsPodReady(curPod) && rs.Spec.MinReadySeconds > 0 {
		c.queue.AddAfter(controllerutil.KeyOf(rs), time.Duration(rs.Spec.MinReadySeconds)*time.Second)
	}
}

func (c *Controller) deletePod(obj interface{}) {
	pod, ok := controllerutil.Unwrap(obj).(*v1.Pod)
	if !ok {
		return
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return
	}
	if rs := c.resolveControllerRef(pod.Namespace, ref); rs != nil {
		c.expectations.DeletionObserved(controllerutil.KeyOf(rs), controllerutil.PodKey(pod))
		c.queue.Enqueue(rs)
	}
}

// uid returns the object's UID as a string.
func uid(u types.UID) string { return string(u) }
