// Package namespace empties terminating namespaces and then lets them go,
// as kube-controller-manager's namespace controller does: every namespaced
// resource found through discovery is deleted, and once nothing is left the
// "kubernetes" finalizer is removed through namespaces/finalize.
package namespace

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// Config is what the controller needs.
type Config struct {
	// RestConfig acts as system:serviceaccount:kube-system:namespace-controller.
	RestConfig *rest.Config
	// Clock drives retries; real time when nil.
	Clock clock.WithTicker
	// Informers are kube-controller-manager's shared ones; nil makes new ones.
	Informers informers.SharedInformerFactory
}

// Controller deletes the content of terminating namespaces.
type Controller struct {
	cfg     Config
	client  kubernetes.Interface
	dynamic dynamic.Interface
	queue   workqueue.TypedRateLimitingInterface[string]
}

// New builds the controller.
func New(cfg Config) (*Controller, error) {
	if cfg.RestConfig == nil {
		return nil, fmt.Errorf("namespace controller: RestConfig is required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	c, err := kubernetes.NewForConfig(cfg.RestConfig)
	if err != nil {
		return nil, err
	}
	d, err := dynamic.NewForConfig(cfg.RestConfig)
	if err != nil {
		return nil, err
	}
	return &Controller{cfg: cfg, client: c, dynamic: d, queue: workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "namespace", Clock: cfg.Clock})}, nil
}

// Start runs the controller until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	f := c.cfg.Informers
	if f == nil {
		f = informers.NewSharedInformerFactory(c.client, 0)
	}
	inf := f.Core().V1().Namespaces().Informer()
	lister := f.Core().V1().Namespaces().Lister()
	enqueue := func(obj any) {
		if ns, ok := obj.(*corev1.Namespace); ok && ns.DeletionTimestamp != nil {
			c.queue.Add(ns.Name)
		}
	}
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }})
	f.Start(ctx.Done())
	go func() {
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			return
		}
		for {
			name, quit := c.queue.Get()
			if quit {
				return
			}
			ns, err := lister.Get(name)
			if err == nil {
				var remaining int
				if remaining, err = c.sync(ctx, ns); err == nil && remaining > 0 {
					c.queue.AddAfter(name, time.Second) // look again until everything is gone
				}
			}
			if err != nil && !apierrors.IsNotFound(err) {
				c.queue.AddRateLimited(name)
			} else {
				c.queue.Forget(name)
			}
			c.queue.Done(name)
		}
	}()
	go func() { <-ctx.Done(); c.queue.ShutDown() }()
	return nil
}

// sync deletes what is left in ns and returns how many objects remain; at
// zero it finalizes the namespace.
func (c *Controller) sync(ctx context.Context, ns *corev1.Namespace) (int, error) {
	lists, err := c.client.Discovery().ServerPreferredNamespacedResources()
	if err != nil {
		return 0, err
	}
	remaining := 0
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if !hasVerbs(r.Verbs, "list", "delete") {
				continue
			}
			ri := c.dynamic.Resource(gv.WithResource(r.Name)).Namespace(ns.Name)
			objs, err := ri.List(ctx, metav1.ListOptions{})
			if err != nil {
				return 0, err
			}
			for _, o := range objs.Items {
				remaining++
				if o.GetDeletionTimestamp() != nil {
					continue
				}
				if err := ri.Delete(ctx, o.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					return 0, err
				}
			}
		}
	}
	if remaining > 0 {
		return remaining, nil
	}
	done := ns.DeepCopy()
	done.Spec.Finalizers = nil
	_, err = c.client.CoreV1().Namespaces().Finalize(ctx, done, metav1.UpdateOptions{})
	return 0, err
}

func hasVerbs(have metav1.Verbs, want ...string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			found = found || h == w
		}
		if !found {
			return false
		}
	}
	return true
}
