package admission

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// limitRangerAnnotation records which defaults LimitRanger applied.
const limitRangerAnnotation = "kubernetes.io/limit-ranger"

// LimitRanger applies the namespace's LimitRange defaults to pod containers
// and enforces their min, max and limit/request ratio, as upstream's
// LimitRanger plugin does. It runs as both a mutator and a validator.
type LimitRanger struct {
	store Store
}

// NewLimitRanger returns the plugin reading LimitRanges from store.
func NewLimitRanger(store Store) *LimitRanger { return &LimitRanger{store: store} }

// Name returns "LimitRanger".
func (*LimitRanger) Name() string { return "LimitRanger" }

// Admit sets default requests and limits.
func (l *LimitRanger) Admit(ctx context.Context, a *Attributes) error {
	return l.run(ctx, a, func(lr *corev1.LimitRange, pod *corev1.Pod) error {
		mergePodResourceRequirements(pod, defaultContainerResourceRequirements(lr))
		return nil
	})
}

// Validate enforces the limits.
func (l *LimitRanger) Validate(ctx context.Context, a *Attributes) error {
	return l.run(ctx, a, podValidateLimit)
}

func (l *LimitRanger) run(ctx context.Context, a *Attributes, fn func(*corev1.LimitRange, *corev1.Pod) error) error {
	if !isPod(a) || a.Operation != Create {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	if a.OldObject != nil {
		if acc, err := meta.Accessor(a.OldObject); err == nil && acc.GetDeletionTimestamp() != nil {
			return nil
		}
	}
	items, err := l.store.List(ctx, "limitranges", a.Namespace)
	if err != nil {
		return NewForbidden(a, fmt.Errorf("unable to %s %v at this time because there was an error enforcing limit ranges", a.Operation, a.Resource))
	}
	for _, obj := range items {
		lr, ok := obj.(*corev1.LimitRange)
		if !ok {
			continue
		}
		if err := fn(lr, pod); err != nil {
			return NewForbidden(a, err)
		}
	}
	return nil
}

func defaultContainerResourceRequirements(lr *corev1.LimitRange) corev1.ResourceRequirements {
	req := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	for _, item := range lr.Spec.Limits {
		if item.Type != corev1.LimitTypeContainer {
			continue
		}
		for k, v := range item.DefaultRequest {
			req.Requests[k] = v.DeepCopy()
		}
		for k, v := range item.Default {
			req.Limits[k] = v.DeepCopy()
		}
	}
	return req
}

func mergeContainerResources(c *corev1.Container, def corev1.ResourceRequirements, prefix string, annotations []string) []string {
	var setRequests, setLimits []string
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	for k, v := range def.Limits {
		if _, ok := c.Resources.Limits[k]; !ok {
			c.Resources.Limits[k] = v.DeepCopy()
			setLimits = append(setLimits, string(k))
		}
	}
	for k, v := range def.Requests {
		if _, ok := c.Resources.Requests[k]; !ok {
			c.Resources.Requests[k] = v.DeepCopy()
			setRequests = append(setRequests, string(k))
		}
	}
	if len(setRequests) > 0 {
		sort.Strings(setRequests)
		annotations = append(annotations, strings.Join(setRequests, ", ")+fmt.Sprintf(" request for %s %s", prefix, c.Name))
	}
	if len(setLimits) > 0 {
		sort.Strings(setLimits)
		annotations = append(annotations, strings.Join(setLimits, ", ")+fmt.Sprintf(" limit for %s %s", prefix, c.Name))
	}
	return annotations
}

func mergePodResourceRequirements(pod *corev1.Pod, def corev1.ResourceRequirements) {
	var annotations []string
	for i := range pod.Spec.Containers {
		annotations = mergeContainerResources(&pod.Spec.Containers[i], def, "container", annotations)
	}
	for i := range pod.Spec.InitContainers {
		annotations = mergeContainerResources(&pod.Spec.InitContainers[i], def, "init container", annotations)
	}
	if len(annotations) > 0 {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[limitRangerAnnotation] = "LimitRanger plugin set: " + strings.Join(annotations, "; ")
	}
}

func requestLimitEnforcedValues(req, lim, enforced resource.Quantity) (int64, int64, int64) {
	r, l, e := req.Value(), lim.Value(), enforced.Value()
	if r <= resource.MaxMilliValue && l <= resource.MaxMilliValue && e <= resource.MaxMilliValue {
		r, l, e = req.MilliValue(), lim.MilliValue(), enforced.MilliValue()
	}
	return r, l, e
}

func minConstraint(limitType, name string, enforced resource.Quantity, request, limit corev1.ResourceList) error {
	req, hasReq := request[corev1.ResourceName(name)]
	lim, hasLim := limit[corev1.ResourceName(name)]
	r, l, e := requestLimitEnforcedValues(req, lim, enforced)
	if !hasReq {
		return fmt.Errorf("minimum %s usage per %s is %s.  No request is specified", name, limitType, enforced.String())
	}
	if r < e {
		return fmt.Errorf("minimum %s usage per %s is %s, but request is %s", name, limitType, enforced.String(), req.String())
	}
	if hasLim && l < e {
		return fmt.Errorf("minimum %s usage per %s is %s, but limit is %s", name, limitType, enforced.String(), lim.String())
	}
	return nil
}

func maxConstraint(limitType, name string, enforced resource.Quantity, request, limit corev1.ResourceList) error {
	req, hasReq := request[corev1.ResourceName(name)]
	lim, hasLim := limit[corev1.ResourceName(name)]
	r, l, e := requestLimitEnforcedValues(req, lim, enforced)
	if !hasLim {
		return fmt.Errorf("maximum %s usage per %s is %s.  No limit is specified", name, limitType, enforced.String())
	}
	if l > e {
		return fmt.Errorf("maximum %s usage per %s is %s, but limit is %s", name, limitType, enforced.String(), lim.String())
	}
	if hasReq && r > e {
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, limitType, enforced.String(), req.String())
	}
	return nil
}

func limitRequestRatioConstraint(limitType, name string, enforced resource.Quantity, request, limit corev1.ResourceList) error {
	req, hasReq := request[corev1.ResourceName(name)]
	lim, hasLim := limit[corev1.ResourceName(name)]
	r, l, _ := requestLimitEnforcedValues(req, lim, enforced)
	if !hasReq || r == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0", name, limitType, enforced.String())
	}
	if !hasLim || l == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no limit is specified or limit is 0", name, limitType, enforced.String())
	}
	observed := float64(l) / float64(r)
	display := observed
	maxRatio := float64(enforced.Value())
	if enforced.Value() <= resource.MaxMilliValue {
		observed *= 1000
		maxRatio = float64(enforced.MilliValue())
	}
	if observed > maxRatio {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but provided ratio is %f", name, limitType, enforced.String(), display)
	}
	return nil
}

func checkAll(limitType string, item corev1.LimitRangeItem, request, limit corev1.ResourceList, errs []error) []error {
	for k, v := range item.Min {
		if err := minConstraint(limitType, string(k), v, request, limit); err != nil {
			errs = append(errs, err)
		}
	}
	for k, v := range item.Max {
		if err := maxConstraint(limitType, string(k), v, request, limit); err != nil {
			errs = append(errs, err)
		}
	}
	for k, v := range item.MaxLimitRequestRatio {
		if err := limitRequestRatioConstraint(limitType, string(k), v, request, limit); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func podValidateLimit(lr *corev1.LimitRange, pod *corev1.Pod) error {
	var errs []error
	for _, item := range lr.Spec.Limits {
		switch item.Type {
		case corev1.LimitTypeContainer:
			for i := range pod.Spec.Containers {
				c := &pod.Spec.Containers[i]
				errs = checkAll(string(item.Type), item, c.Resources.Requests, c.Resources.Limits, errs)
			}
			for i := range pod.Spec.InitContainers {
				c := &pod.Spec.InitContainers[i]
				errs = checkAll(string(item.Type), item, c.Resources.Requests, c.Resources.Limits, errs)
			}
		case corev1.LimitTypePod:
			errs = checkAll(string(item.Type), item, podRequests(pod), podLimits(pod), errs)
		}
	}
	return utilerrors.NewAggregate(errs)
}
