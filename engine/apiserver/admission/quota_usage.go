package admission

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
)

// podComputeResources are the pod resources a quota can constrain, as
// upstream's pod evaluator lists them.
var podComputeResources = sets.New[corev1.ResourceName](
	corev1.ResourcePods, "count/pods",
	corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsEphemeralStorage,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage,
)

// podConstraintResources are those every container must state when a quota
// limits them (upstream's validationSet).
var podConstraintResources = sets.New[corev1.ResourceName](
	corev1.ResourceCPU, corev1.ResourceMemory,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory,
)

// legacyCountResources are the core resources whose object count a quota may
// name without the count/ prefix.
var legacyCountResources = sets.New[string]("configmaps", "secrets", "resourcequotas", "services",
	"persistentvolumeclaims", "replicationcontrollers")

var podsGR = schema.GroupResource{Resource: "pods"}

// objectCountName is upstream's ObjectCountQuotaResourceNameFor.
func objectCountName(gr schema.GroupResource) corev1.ResourceName {
	if gr.Group == "" {
		return corev1.ResourceName("count/" + gr.Resource)
	}
	return corev1.ResourceName("count/" + gr.Resource + "." + gr.Group)
}

// matchingResources returns the names in hard that objects of gr consume.
func matchingResources(gr schema.GroupResource, hard []corev1.ResourceName) []corev1.ResourceName {
	var out []corev1.ResourceName
	for _, name := range hard {
		switch {
		case gr == podsGR && (podComputeResources.Has(name) || strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) ||
			strings.HasPrefix(string(name), corev1.ResourceRequestsHugePagesPrefix)):
			out = append(out, name)
		case name == objectCountName(gr):
			out = append(out, name)
		case gr.Group == "" && legacyCountResources.Has(gr.Resource) && string(name) == gr.Resource:
			out = append(out, name)
		}
	}
	return out
}

// usage is what one object of gr consumes (upstream's evaluator Usage).
func usage(gr schema.GroupResource, obj runtime.Object) corev1.ResourceList {
	one := *resource.NewQuantity(1, resource.DecimalSI)
	out := corev1.ResourceList{objectCountName(gr): one.DeepCopy()}
	if gr.Group == "" && legacyCountResources.Has(gr.Resource) {
		out[corev1.ResourceName(gr.Resource)] = one.DeepCopy()
	}
	pod, ok := obj.(*corev1.Pod)
	if gr != podsGR || !ok {
		return out
	}
	if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		return out
	}
	for k, v := range podComputeUsage(podRequests(pod), podLimits(pod)) {
		out[k] = v
	}
	return out
}

// podComputeUsage is upstream's podComputeUsageHelper.
func podComputeUsage(requests, limits corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(1, resource.DecimalSI)}
	pairs := []struct{ plain, req, lim corev1.ResourceName }{
		{corev1.ResourceCPU, corev1.ResourceRequestsCPU, corev1.ResourceLimitsCPU},
		{corev1.ResourceMemory, corev1.ResourceRequestsMemory, corev1.ResourceLimitsMemory},
		{corev1.ResourceEphemeralStorage, corev1.ResourceRequestsEphemeralStorage, corev1.ResourceLimitsEphemeralStorage},
	}
	for _, p := range pairs {
		if q, ok := requests[p.plain]; ok {
			out[p.plain] = q.DeepCopy()
			out[p.req] = q.DeepCopy()
		}
		if q, ok := limits[p.plain]; ok {
			out[p.lim] = q.DeepCopy()
		}
	}
	for name, q := range requests {
		if strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
			out[name] = q.DeepCopy()
			out[corev1.ResourceName(corev1.DefaultResourceRequestsPrefix+string(name))] = q.DeepCopy()
		}
	}
	return out
}

// podConstraints is the pod evaluator's Constraints: every container must
// state each cpu/memory resource the quota limits.
func podConstraints(required []corev1.ResourceName, pod *corev1.Pod) error {
	requiredSet := sets.New(required...).Intersection(podConstraintResources)
	missing := map[corev1.ResourceName]sets.Set[string]{}
	check := func(c *corev1.Container) {
		have := sets.KeySet(podComputeUsage(c.Resources.Requests, c.Resources.Limits))
		for _, r := range sets.List(requiredSet.Difference(have)) {
			if missing[r] == nil {
				missing[r] = sets.New[string]()
			}
			missing[r].Insert(c.Name)
		}
	}
	for i := range pod.Spec.Containers {
		check(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.InitContainers {
		check(&pod.Spec.InitContainers[i])
	}
	if len(missing) == 0 {
		return nil
	}
	names := make([]string, 0, len(missing))
	for r := range missing {
		names = append(names, string(r))
	}
	sort.Strings(names)
	msgs := make([]string, 0, len(names))
	for _, r := range names {
		msgs = append(msgs, fmt.Sprintf("%s for: %s", r, strings.Join(sets.List(missing[corev1.ResourceName(r)]), ",")))
	}
	return fmt.Errorf("must specify %s", strings.Join(msgs, "; "))
}

// quotaMatches applies a quota's scopes. Only the pod scopes Terminating,
// NotTerminating, BestEffort and NotBestEffort are understood; a quota with
// any other scope, or any scope for a non-pod, does not match.
func quotaMatches(q *corev1.ResourceQuota, gr schema.GroupResource, obj runtime.Object) bool {
	if len(q.Spec.Scopes) == 0 && q.Spec.ScopeSelector == nil {
		return true
	}
	pod, ok := obj.(*corev1.Pod)
	if gr != podsGR || !ok || q.Spec.ScopeSelector != nil {
		return false
	}
	for _, s := range q.Spec.Scopes {
		terminating := pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds >= 0
		var m bool
		switch s {
		case corev1.ResourceQuotaScopeTerminating:
			m = terminating
		case corev1.ResourceQuotaScopeNotTerminating:
			m = !terminating
		case corev1.ResourceQuotaScopeBestEffort:
			m = isBestEffort(pod)
		case corev1.ResourceQuotaScopeNotBestEffort:
			m = !isBestEffort(pod)
		}
		if !m {
			return false
		}
	}
	return true
}

func isBestEffort(pod *corev1.Pod) bool {
	for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, c := range cs {
			for _, l := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
				for name, q := range l {
					if (name == corev1.ResourceCPU || name == corev1.ResourceMemory) && !q.IsZero() {
						return false
					}
				}
			}
		}
	}
	return true
}

// computeUsage recounts what the namespace's stored objects consume of the
// named resources; it stands in for the quota controller, which podtrace
// does not run.
func computeUsage(ctx context.Context, store Store, q *corev1.ResourceQuota, names []corev1.ResourceName) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	byResource := map[schema.GroupResource][]corev1.ResourceName{}
	for _, name := range names {
		gr, ok := resourceForQuotaName(name)
		if !ok {
			continue
		}
		byResource[gr] = append(byResource[gr], name)
	}
	for gr, wanted := range byResource {
		objs, err := store.List(ctx, gr.Resource, q.Namespace)
		if err != nil {
			return nil, fmt.Errorf("list %s for quota %s: %w", gr.Resource, q.Name, err)
		}
		sum := corev1.ResourceList{}
		for _, n := range wanted {
			sum[n] = resource.MustParse("0")
		}
		for _, obj := range objs {
			if !quotaMatches(q, gr, obj) {
				continue
			}
			addResourceList(sum, mask(usage(gr, obj), wanted))
		}
		for k, v := range sum {
			out[k] = v
		}
	}
	return out, nil
}

// resourceForQuotaName maps a quota resource name to the resource whose
// objects consume it.
func resourceForQuotaName(name corev1.ResourceName) (schema.GroupResource, bool) {
	s := string(name)
	if podComputeResources.Has(name) || strings.HasPrefix(s, corev1.ResourceHugePagesPrefix) || strings.HasPrefix(s, corev1.ResourceRequestsHugePagesPrefix) {
		return podsGR, true
	}
	if legacyCountResources.Has(s) {
		return schema.GroupResource{Resource: s}, true
	}
	if rest, ok := strings.CutPrefix(s, "count/"); ok {
		res, group, _ := strings.Cut(rest, ".")
		return schema.GroupResource{Group: group, Resource: res}, true
	}
	return schema.GroupResource{}, false
}

func mask(list corev1.ResourceList, names []corev1.ResourceName) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, n := range names {
		if q, ok := list[n]; ok {
			out[n] = q.DeepCopy()
		}
	}
	return out
}

func resourceNames(list corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(list))
	for k := range list {
		out = append(out, k)
	}
	return out
}

func removeZeros(list corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range list {
		if !v.IsZero() {
			out[k] = v
		}
	}
	return out
}

// prettyPrint formats a resource list sorted by name, as upstream's quota
// errors do.
func prettyPrint(list corev1.ResourceList) string {
	keys := make([]string, 0, len(list))
	for k := range list {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v := list[corev1.ResourceName(k)]
		parts = append(parts, k+"="+v.String())
	}
	return strings.Join(parts, ",")
}
