// Package endpointslice is kube-controller-manager's EndpointSlice
// controller (pkg/controller/endpointslice) for podtrace: for every Service
// with a selector it keeps EndpointSlices listing the ready, not-ready and
// terminating pods the selector matches, with the pod IP, the conditions
// ready/serving/terminating, the node name, a reference to the pod and the
// Service's ports resolved against the pod. Slices carry the
// kubernetes.io/service-name and endpointslice.kubernetes.io/managed-by
// labels, a controller reference to the Service, and are named
// "<service>-" plus five random characters.
package endpointslice

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/podtrace/podtrace/engine/controllers/controllerutil"
)

// ControllerName is the managed-by label value of the slices this controller owns.
const ControllerName = "endpointslice-controller.k8s.io"

// maxEndpointsPerSlice is kube-controller-manager's --max-endpoints-per-slice default.
const maxEndpointsPerSlice = 100

// DefaultUser is the controller's identity (docs/architecture.md).
const DefaultUser = "system:serviceaccount:kube-system:endpointslice-controller"

// Config is what every controller of kube-controller-manager's takes; this
// one uses Client, Clock, Informers, Workers and RateLimiter.
type Config = controllerutil.Config

// Controller keeps the EndpointSlices of Services with selectors.
type Controller struct {
	cfg      Config
	queue    *controllerutil.Queue
	services corelisters.ServiceLister
	pods     corelisters.PodLister
	slices   discoverylisters.EndpointSliceLister
	tracker  *tracker
}

// New builds the controller.
func New(cfg Config) (*Controller, error) {
	cfg, err := cfg.WithDefaults(DefaultUser)
	if err != nil {
		return nil, fmt.Errorf("endpointslice: %w", err)
	}
	if cfg.RateLimiter == nil { // kube-controller-manager's for this controller
		cfg.RateLimiter = workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, 1000*time.Second)
	}
	return &Controller{cfg: cfg, tracker: newTracker(), queue: cfg.NewQueue("endpoint_slice", "endpointslice-controller")}, nil
}

// Start runs the controller until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	f := c.cfg.InformerFactory()
	svcInf := f.Core().V1().Services().Informer()
	podInf := f.Core().V1().Pods().Informer()
	sliceInf := f.Discovery().V1().EndpointSlices().Informer()
	c.services, c.pods, c.slices = f.Core().V1().Services().Lister(), f.Core().V1().Pods().Lister(), f.Discovery().V1().EndpointSlices().Lister()
	svcHandler := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			c.queue.Add(key)
		}
	}
	svcInf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: svcHandler,
		UpdateFunc: func(_, o any) { svcHandler(o) }, DeleteFunc: svcHandler})
	podInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { c.podChanged(nil, o) },
		UpdateFunc: func(old, o any) { c.podChanged(old, o) },
		DeleteFunc: func(o any) { c.podChanged(nil, o) },
	})
	sliceHandler := func(obj any, deleted bool) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		s, ok := obj.(*discoveryv1.EndpointSlice)
		if !ok || s.Labels[discoveryv1.LabelManagedBy] != ControllerName || s.Labels[discoveryv1.LabelServiceName] == "" {
			return
		}
		key := s.Namespace + "/" + s.Labels[discoveryv1.LabelServiceName]
		if deleted {
			c.tracker.gone(key, s.Name)
		}
		c.queue.Add(key)
	}
	sliceInf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(o any) { sliceHandler(o, false) },
		UpdateFunc: func(_, o any) { sliceHandler(o, false) }, DeleteFunc: func(o any) { sliceHandler(o, true) }})
	c.queue.Start(ctx, f, c.cfg.Workers, c.sync, svcInf.HasSynced, podInf.HasSynced, sliceInf.HasSynced)
	return nil
}

// podChanged queues the Services whose selector matches the pod now or before.
func (c *Controller) podChanged(old, obj any) {
	for _, key := range ServicesSelecting(c.services, old, obj) {
		c.queue.Add(key)
	}
}

// ServicesSelecting returns the keys (namespace/name) of the Services whose
// selector matches the pod obj, or the pod before the update when old is
// set; none for a resync (same resourceVersion). obj may be a deletion
// tombstone.
func ServicesSelecting(services corelisters.ServiceLister, old, obj any) []string {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil
	}
	sets := []labels.Set{pod.Labels}
	if o, ok := old.(*corev1.Pod); ok {
		if o.ResourceVersion == pod.ResourceVersion {
			return nil
		}
		sets = append(sets, o.Labels)
	}
	svcs, err := services.Services(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var keys []string
	for _, svc := range svcs {
		if svc.Spec.Selector == nil {
			continue
		}
		sel := labels.Set(svc.Spec.Selector).AsSelectorPreValidated()
		for _, l := range sets {
			if sel.Matches(l) {
				keys = append(keys, svc.Namespace+"/"+svc.Name)
				break
			}
		}
	}
	return keys
}

// sync brings one Service's slices in line with its pods.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	existing, err := c.slices.EndpointSlices(ns).List(labels.SelectorFromSet(labels.Set{
		discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: ControllerName}))
	if err != nil {
		return err
	}
	if c.tracker.stale(key, existing) {
		return errStale
	}
	svc, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.tracker.forget(key)
	}
	if apierrors.IsNotFound(err) || (err == nil && (svc.Spec.Selector == nil || svc.Spec.Type == corev1.ServiceTypeExternalName)) {
		// No slices for this Service: upstream leaves a deleted Service's
		// slices to the garbage collector through their owner reference;
		// podtrace's collector follows Deployments and ReplicaSets only, so
		// the controller removes them itself.
		return c.deleteSlices(ctx, key, existing)
	}
	if err != nil {
		return err
	}
	pods, err := c.pods.Pods(ns).List(labels.Set(svc.Spec.Selector).AsSelectorPreValidated())
	if err != nil {
		return err
	}
	return c.reconcile(ctx, svc, pods, existing)
}
