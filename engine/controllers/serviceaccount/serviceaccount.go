// Package serviceaccount makes sure every namespace has a "default"
// ServiceAccount, as kube-controller-manager's serviceaccount controller does.
package serviceaccount

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// Config is what the controller needs.
type Config struct {
	// Client acts as system:serviceaccount:kube-system:service-account-controller.
	Client kubernetes.Interface
	// Clock drives retries; real time when nil.
	Clock clock.WithTicker
}

// Controller creates missing default ServiceAccounts.
type Controller struct {
	cfg   Config
	queue workqueue.TypedRateLimitingInterface[string]
}

// New builds the controller.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil {
		return nil, fmt.Errorf("serviceaccount controller: Client is required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Controller{cfg: cfg, queue: workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "serviceaccount", Clock: cfg.Clock})}, nil
}

// Start runs the controller until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	f := informers.NewSharedInformerFactory(c.cfg.Client, 0)
	nsInf := f.Core().V1().Namespaces().Informer()
	saInf := f.Core().V1().ServiceAccounts().Informer()
	saLister := f.Core().V1().ServiceAccounts().Lister()
	nsLister := f.Core().V1().Namespaces().Lister()
	nsInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.queue.Add(obj.(*corev1.Namespace).Name) },
		UpdateFunc: func(_, obj any) { c.queue.Add(obj.(*corev1.Namespace).Name) },
	})
	f.Start(ctx.Done())
	go func() {
		if !cache.WaitForCacheSync(ctx.Done(), nsInf.HasSynced, saInf.HasSynced) {
			return
		}
		for {
			ns, quit := c.queue.Get()
			if quit {
				return
			}
			err := c.ensure(ctx, ns, nsLister.Get, saLister.ServiceAccounts(ns).Get)
			if err != nil {
				c.queue.AddRateLimited(ns)
			} else {
				c.queue.Forget(ns)
			}
			c.queue.Done(ns)
		}
	}()
	go func() { <-ctx.Done(); c.queue.ShutDown() }()
	return nil
}

func (c *Controller) ensure(ctx context.Context, ns string, getNS func(string) (*corev1.Namespace, error),
	getSA func(string) (*corev1.ServiceAccount, error)) error {
	if _, err := getSA("default"); err == nil {
		return nil
	}
	namespace, err := getNS(ns)
	if err != nil || namespace.Status.Phase == corev1.NamespaceTerminating {
		return nil
	}
	_, err = c.cfg.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
