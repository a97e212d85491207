// Package endpoint is kube-controller-manager's legacy Endpoints controller
// (pkg/controller/endpoint) for podtrace: for every Service with a
// selector it keeps a v1 Endpoints object of the same name whose subsets
// list the ready pods as addresses and the others as notReadyAddresses,
// with the Service's ports resolved against each pod. kubectl before 1.33
// reads these in `kubectl describe service`.
package endpoint

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/podtrace/podtrace/engine/controllers/controllerutil"
	"github.com/podtrace/podtrace/engine/controllers/endpointslice"
)

// Upstream's label marking the Endpoints this controller manages, and its value.
const (
	LabelManagedBy = "endpoints.kubernetes.io/managed-by"
	ControllerName = "endpoint-controller"
)

// DefaultUser is the controller's identity (docs/architecture.md).
const DefaultUser = "system:serviceaccount:kube-system:endpoint-controller"

// Config is what every controller of kube-controller-manager's takes; this
// one uses Client, Clock, Informers, Workers and RateLimiter.
type Config = controllerutil.Config

// Controller keeps the Endpoints of Services with selectors.
type Controller struct {
	cfg       Config
	queue     *controllerutil.Queue
	services  corelisters.ServiceLister
	pods      corelisters.PodLister
	endpoints corelisters.EndpointsLister
}

// New builds the controller.
func New(cfg Config) (*Controller, error) {
	cfg, err := cfg.WithDefaults(DefaultUser)
	if err != nil {
		return nil, fmt.Errorf("endpoint: %w", err)
	}
	if cfg.RateLimiter == nil { // kube-controller-manager's for this controller
		cfg.RateLimiter = workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, 1000*time.Second)
	}
	return &Controller{cfg: cfg, queue: cfg.NewQueue("endpoint", ControllerName)}, nil
}

// Start runs the controller until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	f := c.cfg.InformerFactory()
	svcInf, podInf, epInf := f.Core().V1().Services().Informer(), f.Core().V1().Pods().Informer(), f.Core().V1().Endpoints().Informer()
	c.services, c.pods, c.endpoints = f.Core().V1().Services().Lister(), f.Core().V1().Pods().Lister(), f.Core().V1().Endpoints().Lister()
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			c.queue.Add(key)
		}
	}
	svcInf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }, DeleteFunc: enqueue})
	podChanged := func(old, obj any) {
		for _, key := range endpointslice.ServicesSelecting(c.services, old, obj) {
			c.queue.Add(key)
		}
	}
	podInf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(o any) { podChanged(nil, o) },
		UpdateFunc: podChanged, DeleteFunc: func(o any) { podChanged(nil, o) }})
	// An Endpoints object deleted or changed by someone else is put back.
	epInf.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }})
	c.queue.Start(ctx, f, c.cfg.Workers, c.sync, svcInf.HasSynced, podInf.HasSynced, epInf.HasSynced)
	return nil
}

// sync is syncService: the Endpoints of a deleted Service are deleted, a
// Service without selector (whose Endpoints the user manages) or of type
// ExternalName is left alone.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	api := c.cfg.Client.CoreV1().Endpoints(ns)
	svc, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		if err := api.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return nil
	}
	if err != nil {
		return err
	}
	if svc.Spec.Selector == nil || svc.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	pods, err := c.pods.Pods(ns).List(labels.Set(svc.Spec.Selector).AsSelectorPreValidated())
	if err != nil {
		return err
	}
	subsets := Subsets(svc, pods)
	cur, err := c.endpoints.Endpoints(ns).Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	create := cur == nil
	if create {
		cur = &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	}
	want := endpointsLabels(svc)
	if !create && apiequality.Semantic.DeepEqual(cur.Subsets, subsets) && apiequality.Semantic.DeepEqual(cur.Labels, want) {
		return nil
	}
	next := cur.DeepCopy()
	next.Subsets, next.Labels = subsets, want
	if create {
		_, err = api.Create(ctx, next, metav1.CreateOptions{})
	} else {
		_, err = api.Update(ctx, next, metav1.UpdateOptions{})
	}
	return err
}

// endpointsLabels are the Service's labels, the headless label for a
// headless Service, and the managed-by label.
func endpointsLabels(svc *corev1.Service) map[string]string {
	l := map[string]string{}
	for k, v := range svc.Labels {
		l[k] = v
	}
	delete(l, corev1.IsHeadlessService)
	if svc.Spec.ClusterIP == corev1.ClusterIPNone || svc.Spec.ClusterIP == "" {
		l[corev1.IsHeadlessService] = ""
	}
	l[LabelManagedBy] = ControllerName
	return l
}

// Subsets computes the Service's subsets from its pods, repacked as
// endpoints.RepackSubsets does: addresses with the same ports share a
// subset, addresses sorted by IP.
func Subsets(svc *corev1.Service, pods []*corev1.Pod) []corev1.EndpointSubset {
	type entry struct {
		addr  corev1.EndpointAddress
		ready bool
		ports []corev1.EndpointPort
	}
	var entries []entry
	for _, pod := range pods {
		if !endpointslice.InEndpoints(pod, svc.Spec.PublishNotReadyAddresses) {
			continue
		}
		node := pod.Spec.NodeName
		e := entry{addr: corev1.EndpointAddress{IP: endpointslice.PodIPv4(pod), NodeName: &node,
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}},
			ready: svc.Spec.PublishNotReadyAddresses || endpointslice.PodReady(pod)}
		if pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name && pod.Namespace == svc.Namespace {
			e.addr.Hostname = pod.Spec.Hostname
		}
		for i := range svc.Spec.Ports {
			sp := &svc.Spec.Ports[i]
			if port, ok := endpointslice.FindPort(pod, sp); ok {
				e.ports = append(e.ports, corev1.EndpointPort{Name: sp.Name, Port: port, Protocol: sp.Protocol, AppProtocol: sp.AppProtocol})
			}
		}
		if len(e.ports) == 0 && !(len(svc.Spec.Ports) == 0 && svc.Spec.ClusterIP == corev1.ClusterIPNone) {
			continue // no port resolves, and not a port-less headless Service
		}
		entries = append(entries, e)
	}
	byPorts := map[string]*corev1.EndpointSubset{}
	var keys []string
	for _, e := range entries {
		sort.Slice(e.ports, func(i, j int) bool { return portString(e.ports[i]) < portString(e.ports[j]) })
		var b strings.Builder
		for _, p := range e.ports {
			b.WriteString(portString(p) + ";")
		}
		k := b.String()
		ss := byPorts[k]
		if ss == nil {
			ss = &corev1.EndpointSubset{Ports: e.ports}
			byPorts[k] = ss
			keys = append(keys, k)
		}
		if e.ready {
			ss.Addresses = append(ss.Addresses, e.addr)
		} else {
			ss.NotReadyAddresses = append(ss.NotReadyAddresses, e.addr)
		}
	}
	sort.Strings(keys)
	var out []corev1.EndpointSubset
	for _, k := range keys {
		ss := byPorts[k]
		sortAddresses(ss.Addresses)
		sortAddresses(ss.NotReadyAddresses)
		out = append(out, *ss)
	}
	return out
}

func portString(p corev1.EndpointPort) string {
	return fmt.Sprintf("%s/%s/%d", p.Name, p.Protocol, p.Port)
}

func sortAddresses(a []corev1.EndpointAddress) {
	sort.Slice(a, func(i, j int) bool {
		if a[i].IP != a[j].IP {
			return a[i].IP < a[j].IP
		}
		return a[i].TargetRef.UID < a[j].TargetRef.UID
	})
}
