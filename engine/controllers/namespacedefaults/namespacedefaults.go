// Package namespacedefaults gives every namespace what kube-controller-manager
// puts there: the "default" ServiceAccount (its serviceaccount controller)
// and the "kube-root-ca.crt" ConfigMap holding the cluster CA (its
// root-ca-cert-publisher), which every pod's kube-api-access volume mounts.
package namespacedefaults

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

// RootCAConfigMap is the name of the ConfigMap holding the cluster CA.
const RootCAConfigMap = "kube-root-ca.crt"

// Config is what the controller needs.
type Config struct {
	// Client acts as system:serviceaccount:kube-system:namespace-defaults.
	Client kubernetes.Interface
	// CACert is the cluster CA in PEM form, published as ca.crt.
	CACert []byte
	// Clock drives retries; real time when nil.
	Clock clock.WithTicker
	// Informers are kube-controller-manager's shared ones; nil makes new ones from Client.
	Informers informers.SharedInformerFactory
}

// Controller creates each namespace's default ServiceAccount and root CA ConfigMap.
type Controller struct {
	cfg   Config
	queue workqueue.TypedRateLimitingInterface[string]
}

// New builds the controller.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || len(cfg.CACert) == 0 {
		return nil, fmt.Errorf("namespacedefaults: Client and CACert are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Controller{cfg: cfg, queue: workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "namespacedefaults", Clock: cfg.Clock})}, nil
}

// Start runs the controller until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	f := c.cfg.Informers
	if f == nil {
		f = informers.NewSharedInformerFactory(c.cfg.Client, 0)
	}
	nsInf := f.Core().V1().Namespaces().Informer()
	nsLister := f.Core().V1().Namespaces().Lister()
	enqueue := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		switch o := obj.(type) {
		case *corev1.Namespace:
			c.queue.Add(o.Name)
		case *corev1.ServiceAccount:
			c.queue.Add(o.Namespace)
		case *corev1.ConfigMap:
			c.queue.Add(o.Namespace)
		}
	}
	handler := cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }, DeleteFunc: enqueue}
	nsInf.AddEventHandler(handler)
	saInf := f.Core().V1().ServiceAccounts().Informer()
	saInf.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: enqueue})
	cmInf := f.Core().V1().ConfigMaps().Informer()
	cmInf.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }})
	saLister, cmLister := f.Core().V1().ServiceAccounts().Lister(), f.Core().V1().ConfigMaps().Lister()
	f.Start(ctx.Done())
	go func() {
		if !cache.WaitForCacheSync(ctx.Done(), nsInf.HasSynced, saInf.HasSynced, cmInf.HasSynced) {
			return
		}
		for {
			ns, quit := c.queue.Get()
			if quit {
				return
			}
			namespace, err := nsLister.Get(ns)
			if err == nil && namespace.Status.Phase != corev1.NamespaceTerminating {
				_, saErr := saLister.ServiceAccounts(ns).Get("default")
				cm, cmErr := cmLister.ConfigMaps(ns).Get(RootCAConfigMap)
				err = c.ensure(ctx, ns, apierrors.IsNotFound(saErr), cm, apierrors.IsNotFound(cmErr))
			}
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

func (c *Controller) ensure(ctx context.Context, ns string, needSA bool, cm *corev1.ConfigMap, needCM bool) error {
	core := c.cfg.Client.CoreV1()
	if needSA {
		_, err := core.ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	data := map[string]string{"ca.crt": string(c.cfg.CACert)}
	switch {
	case needCM:
		_, err := core.ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: RootCAConfigMap,
			Annotations: map[string]string{"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}},
			Data: data}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	case cm != nil && cm.Data["ca.crt"] != data["ca.crt"]:
		cm = cm.DeepCopy()
		cm.Data = data
		if _, err := core.ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	return nil
}
