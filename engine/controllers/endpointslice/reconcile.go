package endpointslice

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// group is the endpoints sharing one resolved port list.
type group struct {
	ports     []discoveryv1.EndpointPort
	endpoints []discoveryv1.Endpoint
}

// desired computes the slices' contents: endpoints grouped by their ports,
// each group cut into slices of maxEndpointsPerSlice, or one empty
// placeholder slice when no pod qualifies.
func desired(svc *corev1.Service, pods []*corev1.Pod) [][2]any {
	groups := map[string]*group{}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	for _, pod := range pods {
		if !InEndpoints(pod, true) {
			continue
		}
		ports := endpointPorts(svc, pod)
		key := portsKey(ports)
		g := groups[key]
		if g == nil {
			g = &group{ports: ports}
			groups[key] = g
		}
		g.endpoints = append(g.endpoints, endpointFor(svc, pod))
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out [][2]any
	for _, k := range keys {
		g := groups[k]
		for i := 0; i < len(g.endpoints); i += maxEndpointsPerSlice {
			out = append(out, [2]any{g.ports, g.endpoints[i:min(i+maxEndpointsPerSlice, len(g.endpoints))]})
		}
	}
	if len(out) == 0 {
		out = append(out, [2]any{[]discoveryv1.EndpointPort{}, []discoveryv1.Endpoint{}})
	}
	return out
}

// InEndpoints is ShouldPodBeInEndpoints: the pod is not terminal, has an
// IP, and is not terminating unless includeTerminating.
func InEndpoints(pod *corev1.Pod, includeTerminating bool) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if !includeTerminating && pod.DeletionTimestamp != nil {
		return false
	}
	return pod.Status.PodIP != "" || len(pod.Status.PodIPs) > 0
}

// PodIPv4 is the pod's IPv4 address (the first of status.podIPs, or status.podIP).
func PodIPv4(pod *corev1.Pod) string {
	for _, ip := range pod.Status.PodIPs {
		if !strings.Contains(ip.IP, ":") {
			return ip.IP
		}
	}
	return pod.Status.PodIP
}

// PodReady reports whether the pod's Ready condition is True.
func PodReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// endpointFor is the controller's podToEndpoint.
func endpointFor(svc *corev1.Service, pod *corev1.Pod) discoveryv1.Endpoint {
	serving := PodReady(pod)
	ready := svc.Spec.PublishNotReadyAddresses || serving
	terminating := pod.DeletionTimestamp != nil
	if terminating && !svc.Spec.PublishNotReadyAddresses {
		ready = false
	}
	ep := discoveryv1.Endpoint{
		Addresses:  []string{PodIPv4(pod)},
		Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &terminating},
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
	}
	if pod.Spec.NodeName != "" {
		node := pod.Spec.NodeName
		ep.NodeName = &node
	}
	if pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name && pod.Namespace == svc.Namespace {
		h := pod.Spec.Hostname
		ep.Hostname = &h
	}
	return ep
}

// endpointPorts resolves the Service's ports against the pod (FindPort):
// a numeric targetPort as is, a named one through the pod's container ports.
func endpointPorts(svc *corev1.Service, pod *corev1.Pod) []discoveryv1.EndpointPort {
	var out []discoveryv1.EndpointPort
	for i := range svc.Spec.Ports {
		sp := &svc.Spec.Ports[i]
		port, ok := FindPort(pod, sp)
		if !ok {
			continue
		}
		name, proto := sp.Name, sp.Protocol
		out = append(out, discoveryv1.EndpointPort{Name: &name, Port: &port, Protocol: &proto, AppProtocol: sp.AppProtocol})
	}
	return out
}

// FindPort resolves a Service port's targetPort against the pod (podutil.FindPort).
func FindPort(pod *corev1.Pod, sp *corev1.ServicePort) (int32, bool) {
	if sp.TargetPort.Type == 0 { // intstr.Int
		return sp.TargetPort.IntVal, true
	}
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == sp.TargetPort.StrVal && p.Protocol == sp.Protocol {
				return p.ContainerPort, true
			}
		}
	}
	return 0, false
}

func portsKey(ports []discoveryv1.EndpointPort) string {
	var b strings.Builder
	for _, p := range ports {
		fmt.Fprintf(&b, "%s/%s/%d;", deref(p.Name), deref(p.Protocol), derefInt(p.Port))
	}
	return b.String()
}

func deref[T ~string](p *T) string {
	if p == nil {
		return ""
	}
	return string(*p)
}

func derefInt(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// reconcile makes the Service's managed slices hold want: slices with the
// same ports are reused in name order, missing ones created, extra ones deleted.
func (c *Controller) reconcile(ctx context.Context, svc *corev1.Service, pods []*corev1.Pod, existing []*discoveryv1.EndpointSlice) error {
	want := desired(svc, pods)
	sort.Slice(existing, func(i, j int) bool { return existing[i].Name < existing[j].Name })
	used := map[string]bool{}
	api := c.cfg.Client.DiscoveryV1().EndpointSlices(svc.Namespace)
	key := svc.Namespace + "/" + svc.Name
	var errs []error
	for _, w := range want {
		ports, eps := w[0].([]discoveryv1.EndpointPort), w[1].([]discoveryv1.Endpoint)
		var reuse *discoveryv1.EndpointSlice
		for _, s := range existing {
			if !used[s.Name] && portsKey(s.Ports) == portsKey(ports) && s.AddressType == discoveryv1.AddressTypeIPv4 {
				reuse = s
				break
			}
		}
		labels := sliceLabels(svc)
		if reuse == nil {
			created, err := api.Create(ctx, newSlice(svc, labels, ports, eps), metav1.CreateOptions{})
			if err != nil {
				errs = append(errs, err)
			} else {
				c.tracker.wrote(key, created, false)
			}
			continue
		}
		used[reuse.Name] = true
		if apiequality.Semantic.DeepEqual(reuse.Endpoints, eps) && apiequality.Semantic.DeepEqual(reuse.Labels, labels) &&
			len(reuse.Ports) == len(ports) {
			continue
		}
		s := reuse.DeepCopy()
		s.Endpoints, s.Ports, s.Labels = eps, ports, labels
		updated, err := api.Update(ctx, s, metav1.UpdateOptions{})
		if err != nil {
			errs = append(errs, err)
		} else {
			c.tracker.wrote(key, updated, false)
		}
	}
	var extra []*discoveryv1.EndpointSlice
	for _, s := range existing {
		if !used[s.Name] {
			extra = append(extra, s)
		}
	}
	if err := c.deleteSlices(ctx, key, extra); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("sync service %s/%s: %v", svc.Namespace, svc.Name, errs)
	}
	return nil
}

func (c *Controller) deleteSlices(ctx context.Context, key string, slices []*discoveryv1.EndpointSlice) error {
	var errs []error
	for _, s := range slices {
		err := c.cfg.Client.DiscoveryV1().EndpointSlices(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		c.tracker.wrote(key, s, true)
	}
	if len(errs) > 0 {
		return fmt.Errorf("delete endpoint slices: %v", errs)
	}
	return nil
}

// sliceLabels is setEndpointSliceLabels: the Service's labels, the service
// name and managed-by labels, and service.kubernetes.io/headless for
// headless Services.
func sliceLabels(svc *corev1.Service) map[string]string {
	l := map[string]string{}
	for k, v := range svc.Labels {
		if k == discoveryv1.LabelServiceName || k == discoveryv1.LabelManagedBy || k == corev1.IsHeadlessService {
			continue
		}
		l[k] = v
	}
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		l[corev1.IsHeadlessService] = ""
	}
	l[discoveryv1.LabelServiceName] = svc.Name
	l[discoveryv1.LabelManagedBy] = ControllerName
	return l
}

// newSlice is newEndpointSlice: generateName "<service>-", a controller
// reference to the Service.
func newSlice(svc *corev1.Service, labels map[string]string, ports []discoveryv1.EndpointPort, eps []discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	prefix := svc.Name + "-" // a Service name (DNS label) plus "-" is always a valid prefix
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix, Namespace: svc.Namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(svc, corev1.SchemeGroupVersion.WithKind("Service"))}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       ports,
		Endpoints:   eps,
	}
}
