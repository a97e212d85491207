// Package deployment is podtrace's Deployment controller: it creates a
// ReplicaSet per pod template (named <deployment>-<pod-template-hash>),
// scales new and old ReplicaSets by the RollingUpdate or Recreate strategy,
// and keeps the Deployment's status and Available/Progressing conditions. It
// reports each ReplicaSet it creates or scales as a reconcile stage event and
// follows pkg/controller/deployment of Kubernetes 1.36 in behaviour and wording.
package deployment

import (
	"context"
	"fmt"
	"reflect"

	apps "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/podtrace/podtrace/engine/controllers/controllerutil"
)

// Component is the controller's event source and stage component.
const Component = "deployment-controller"

// DefaultUser is the controller's identity (docs/architecture.md).
const DefaultUser = "system:serviceaccount:kube-system:deployment-controller"

var controllerKind = apps.SchemeGroupVersion.WithKind("Deployment")

// Config configures a Controller, with the fields every workload controller
// has. Here Client talks as the deployment-controller (User is DefaultUser
// when empty), Clock also times conditions and progress deadlines, the
// Tracer gates ReplicaSet writes, and Workers and RateLimiter count and pace
// Deployments.
type Config = controllerutil.Config

// Controller is the Deployment controller.
type Controller struct {
	cfg       Config
	clock     clock.WithTicker
	queue     *controllerutil.Queue
	recorder  record.EventRecorder
	dLister   appslisters.DeploymentLister
	rsLister  appslisters.ReplicaSetLister
	podLister corelisters.PodLister
}

// New checks cfg and returns a controller; Start runs it.
func New(cfg Config) (*Controller, error) {
	cfg, err := cfg.WithDefaults(DefaultUser)
	if err != nil {
		return nil, fmt.Errorf("deployment controller: %w", err)
	}
	return &Controller{cfg: cfg, clock: cfg.Clock, queue: cfg.NewQueue("deployment", Component)}, nil
}

// Start starts the informers and the workers and returns; they stop when
// ctx is done. Workers begin once the caches have synced.
func (c *Controller) Start(ctx context.Context) error {
	factory := c.cfg.InformerFactory()
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
	var synced []cache.InformerSynced
	for _, h := range handlers {
		if _, err := h.inf.AddEventHandler(h.h); err != nil {
			return fmt.Errorf("deployment controller: add event handler: %w", err)
		}
		synced = append(synced, h.inf.HasSynced)
	}
	c.recorder = controllerutil.NewRecorder(ctx, c.cfg.Client, Component, c.clock)
	c.queue.Start(ctx, factory, c.cfg.Workers, c.syncDeployment, synced...)
	return nil
}

// HasSynced reports whether the informers' caches are filled.
func (c *Controller) HasSynced() bool { return c.queue.HasSynced() }

func (c *Controller) enqueueDeployment(obj interface{}) {
	if d, ok := controllerutil.Unwrap(obj).(*apps.Deployment); ok {
		c.queue.Enqueue(d)
	}
}

// resolveControllerRef returns the Deployment ref names, if it is still the same object.
func (c *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *apps.Deployment {
	return controllerutil.ResolveControllerRef(ref, controllerKind.Kind, c.dLister.Deployments(namespace).Get)
}

func (c *Controller) enqueueOwnerOfRS(obj interface{}) {
	rs, ok := controllerutil.Unwrap(obj).(*apps.ReplicaSet)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOf(rs); ref != nil {
		if d := c.resolveControllerRef(rs.Namespace, ref); d != nil {
			c.queue.Enqueue(d)
		}
		return
	}
	// An orphan: wake every Deployment that might adopt it.
	controllerutil.EnqueueSelecting(c.queue, c.dLister.Deployments(rs.Namespace).List,
		func(d *apps.Deployment) *metav1.LabelSelector { return d.Spec.Selector }, rs.Labels)
}

func (c *Controller) updateReplicaSet(old, cur interface{}) {
	oldRS, curRS := old.(*apps.ReplicaSet), cur.(*apps.ReplicaSet)
	if oldRS.ResourceVersion == curRS.ResourceVersion {
		return
	}
	oldRef, curRef := metav1.GetControllerOf(oldRS), metav1.GetControllerOf(curRS)
	if oldRef != nil && (curRef == nil || oldRef.UID != curRef.UID) {
		if d := c.resolveControllerRef(oldRS.Namespace, oldRef); d != nil {
			c.queue.Enqueue(d)
		}
	}
	c.enqueueOwnerOfRS(curRS)
}

// deletePod wakes a Recreate deployment once its old pods are all gone.
func (c *Controller) deletePod(obj interface{}) {
	pod, ok := controllerutil.Unwrap(obj).(*v1.Pod)
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
		c.queue.Enqueue(d)
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
	m := controllerutil.NewClaimer(d, controllerKind,
		func(ctx context.Context) (*apps.Deployment, error) {
			return c.cfg.Client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
		},
		controllerutil.PatchReplicaSets(c.cfg.Client))
	out, err := controllerutil.ClaimAll(ctx, m, sel, all)
	for i, rs := range out {
		out[i] = rs.DeepCopy()
	}
	return out, err
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
