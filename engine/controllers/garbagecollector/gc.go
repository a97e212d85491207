// Package garbagecollector deletes objects whose owners are gone, as
// kube-controller-manager's garbage collector does for podtrace's kinds:
// ReplicaSets owned by Deployments and Pods owned by ReplicaSets or Jobs. It honours
// the foregroundDeletion and orphan finalizers.
package garbagecollector

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// Config is what the collector needs.
type Config struct {
	// Client acts as system:serviceaccount:kube-system:generic-garbage-collector.
	Client kubernetes.Interface
	// Clock drives retries; real time when nil.
	Clock clock.WithTicker
	// Workers process owners concurrently; 4 when zero.
	Workers int
	// Informers are kube-controller-manager's shared ones; nil makes new ones from Client.
	Informers informers.SharedInformerFactory
}

// Controller is the garbage collector.
type Controller struct {
	cfg   Config
	kinds []*kind
	queue workqueue.TypedRateLimitingInterface[key]
}

// key names an owner to examine.
type key struct {
	kind int // index into kinds
	uid  types.UID
	ns   string
	name string
}

// kind is one owner kind and its dependents' informer.
type kind struct {
	owner      cache.SharedIndexInformer
	dependents cache.SharedIndexInformer
	ownerKind  string
	ownerOps   objectOps // calls on the owner kind
	depOps     objectOps // calls on the dependent kind
}

const byOwner = "ownerUID"

// New builds the collector.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil {
		return nil, fmt.Errorf("garbagecollector: Client is required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Workers == 0 {
		cfg.Workers = 4
	}
	return &Controller{cfg: cfg, queue: workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[key](),
		workqueue.TypedRateLimitingQueueConfig[key]{Name: "garbage_collector", Clock: cfg.Clock})}, nil
}

func ownerIndex(obj any) ([]string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil
	}
	var out []string
	for _, ref := range m.GetOwnerReferences() {
		out = append(out, string(ref.UID))
	}
	return out, nil
}

// Start runs the collector until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	f := c.cfg.Informers
	if f == nil {
		f = informers.NewSharedInformerFactory(c.cfg.Client, 0)
	}
	apps, core := c.cfg.Client.AppsV1(), c.cfg.Client.CoreV1()
	deploys, rss, pods := f.Apps().V1().Deployments().Informer(), f.Apps().V1().ReplicaSets().Informer(), f.Core().V1().Pods().Informer()
	jobs := f.Batch().V1().Jobs().Informer()
	for _, inf := range []cache.SharedIndexInformer{rss, pods} {
		if err := inf.AddIndexers(cache.Indexers{byOwner: ownerIndex}); err != nil {
			return err
		}
	}
	for _, inf := range []cache.SharedIndexInformer{deploys, rss, jobs} {
		if err := inf.AddIndexers(cache.Indexers{byUID: uidIndex}); err != nil {
			return err
		}
	}
	c.kinds = []*kind{
		{owner: deploys, dependents: rss, ownerKind: "Deployment", ownerOps: deploymentOps(apps), depOps: replicaSetOps(apps)},
		{owner: rss, dependents: pods, ownerKind: "ReplicaSet", ownerOps: replicaSetOps(apps), depOps: podOps(core)},
		{owner: jobs, dependents: pods, ownerKind: "Job", ownerOps: jobOps(c.cfg.Client.BatchV1()), depOps: podOps(core)},
	}
	for i, k := range c.kinds {
		i := i
		enqueue := func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if m, err := meta.Accessor(obj); err == nil {
				c.queue.Add(key{kind: i, uid: m.GetUID(), ns: m.GetNamespace(), name: m.GetName()})
			}
		}
		k.owner.AddEventHandler(cache.ResourceEventHandlerFuncs{
			UpdateFunc: func(_, obj any) {
				if m, err := meta.Accessor(obj); err == nil && m.GetDeletionTimestamp() != nil {
					enqueue(obj)
				}
			},
			DeleteFunc: enqueue,
		})
		// A dependent that arrives after its owner is gone (created just
		// before the owner's deletion) must not be missed.
		checkOwners := func(obj any) {
			m, err := meta.Accessor(obj)
			if err != nil {
				return
			}
			for _, ref := range m.GetOwnerReferences() {
				if ref.Kind == k.ownerKind && !c.ownerExists(k, ref.UID) {
					c.queue.Add(key{kind: i, uid: ref.UID, ns: m.GetNamespace(), name: ref.Name})
				}
			}
		}
		k.dependents.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: checkOwners,
			UpdateFunc: func(_, obj any) { checkOwners(obj) }})
	}
	f.Start(ctx.Done())
	go func() {
		if !cache.WaitForCacheSync(ctx.Done(), deploys.HasSynced, rss.HasSynced, pods.HasSynced, jobs.HasSynced) {
			return
		}
		c.sweep()
		for i := 0; i < c.cfg.Workers; i++ {
			go c.worker(ctx)
		}
	}()
	go func() { <-ctx.Done(); c.queue.ShutDown() }()
	return nil
}

// sweep queues owners of dependents whose owners no longer exist (after a restart).
func (c *Controller) sweep() {
	for i, k := range c.kinds {
		for _, obj := range k.dependents.GetStore().List() {
			m, _ := meta.Accessor(obj)
			for _, ref := range m.GetOwnerReferences() {
				if ref.Kind == k.ownerKind && !c.ownerExists(k, ref.UID) {
					c.queue.Add(key{kind: i, uid: ref.UID, ns: m.GetNamespace(), name: ref.Name})
				}
			}
		}
	}
}

func (c *Controller) ownerExists(k *kind, uid types.UID) bool {
	objs, err := k.owner.GetIndexer().ByIndex(byUID, string(uid))
	return err == nil && len(objs) > 0
}

const byUID = "uid"

func uidIndex(obj any) ([]string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil
	}
	return []string{string(m.GetUID())}, nil
}

func (c *Controller) worker(ctx context.Context) {
	for {
		item, quit := c.queue.Get()
		if quit {
			return
		}
		if err := c.process(ctx, item); err != nil {
			c.queue.AddRateLimited(item)
		} else {
			c.queue.Forget(item)
		}
		c.queue.Done(item)
	}
}

// process handles one owner: gone → delete its dependents; terminating with
// foregroundDeletion → delete dependents, then drop the finalizer; with
// orphan → release dependents, then drop the finalizer.
func (c *Controller) process(ctx context.Context, item key) error {
	k := c.kinds[item.kind]
	deps, err := k.dependents.GetIndexer().ByIndex(byOwner, string(item.uid))
	if err != nil {
		return err
	}
	owner, exists, _ := k.owner.GetStore().GetByKey(item.ns + "/" + item.name)
	var om metav1.Object
	if exists {
		om, _ = meta.Accessor(owner)
		if om.GetUID() != item.uid {
			exists = false
		}
	}
	if !exists {
		// The cache may lag: ask the API server, as upstream's collector does.
		live, err := k.ownerOps.get(ctx, item.ns, item.name)
		if err == nil && live.GetUID() == item.uid {
			return nil
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	switch {
	case !exists:
		background := metav1.DeletePropagationBackground
		for _, d := range deps {
			m, _ := meta.Accessor(d)
			if c.hasOtherLiveOwner(k, m, item.uid) {
				continue
			}
			uid := m.GetUID()
			err := k.depOps.delete(ctx, m.GetNamespace(), m.GetName(), metav1.DeleteOptions{PropagationPolicy: &background,
				Preconditions: &metav1.Preconditions{UID: &uid}})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return err
			}
		}
		return nil
	case om.GetDeletionTimestamp() == nil:
		return nil
	case hasFinalizer(om, metav1.FinalizerOrphanDependents):
		for _, d := range deps {
			m, _ := meta.Accessor(d)
			patch := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"$patch":"delete","uid":%q}],"uid":%q}}`, item.uid, m.GetUID())
			if err := k.depOps.patch(ctx, m.GetNamespace(), m.GetName(), types.StrategicMergePatchType, []byte(patch)); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
		return c.dropFinalizer(ctx, k, om, metav1.FinalizerOrphanDependents)
	case hasFinalizer(om, metav1.FinalizerDeleteDependents):
		if len(deps) > 0 {
			foreground := metav1.DeletePropagationForeground
			for _, d := range deps {
				m, _ := meta.Accessor(d)
				if m.GetDeletionTimestamp() != nil {
					continue
				}
				if err := k.depOps.delete(ctx, m.GetNamespace(), m.GetName(), metav1.DeleteOptions{PropagationPolicy: &foreground}); err != nil && !apierrors.IsNotFound(err) {
					return err
				}
			}
			c.queue.AddAfter(item, time.Second) // look again until the dependents are gone
			return nil
		}
		return c.dropFinalizer(ctx, k, om, metav1.FinalizerDeleteDependents)
	}
	return nil
}

func (c *Controller) hasOtherLiveOwner(k *kind, m metav1.Object, gone types.UID) bool {
	for _, ref := range m.GetOwnerReferences() {
		if ref.UID != gone && (ref.Kind != k.ownerKind || c.ownerExists(k, ref.UID)) {
			return true
		}
	}
	return false
}

func hasFinalizer(m metav1.Object, f string) bool {
	for _, v := range m.GetFinalizers() {
		if v == f {
			return true
		}
	}
	return false
}

func (c *Controller) dropFinalizer(ctx context.Context, k *kind, m metav1.Object, f string) error {
	var keep []string
	for _, v := range m.GetFinalizers() {
		if v != f {
			keep = append(keep, v)
		}
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": keep,
		"resourceVersion": m.GetResourceVersion()}})
	err := k.ownerOps.patch(ctx, m.GetNamespace(), m.GetName(), types.MergePatchType, patch)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
