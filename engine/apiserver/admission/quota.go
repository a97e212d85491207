package admission

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ResourceQuota rejects creates that would exceed a ResourceQuota of the
// namespace and charges the usage to the quotas' status.used, as upstream's
// ResourceQuota plugin does. Usage is released with ReleaseOnDelete, or
// recounted with Recalculate, since podtrace runs no quota controller.
type ResourceQuota struct {
	store Store
	// Retries is how often a quota is re-read and re-charged after a
	// conflicting status update.
	Retries int

	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

// NewResourceQuota returns the plugin reading and charging quotas through
// store.
func NewResourceQuota(store Store) *ResourceQuota {
	return &ResourceQuota{store: store, Retries: 10, locks: map[string]*sync.Mutex{}}
}

// Name returns "ResourceQuota".
func (*ResourceQuota) Name() string { return "ResourceQuota" }

// lock serialises quota work per namespace in this process; conflicts with
// other writers are handled by retrying on Conflict.
func (q *ResourceQuota) lock(namespace string) func() {
	q.mu.Lock()
	l, ok := q.locks[namespace]
	if !ok {
		l = &sync.Mutex{}
		q.locks[namespace] = l
	}
	q.mu.Unlock()
	l.Lock()
	return l.Unlock
}

func (q *ResourceQuota) quotas(ctx context.Context, namespace string) ([]*corev1.ResourceQuota, error) {
	objs, err := q.store.List(ctx, "resourcequotas", namespace)
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.ResourceQuota, 0, len(objs))
	for _, o := range objs {
		if rq, ok := o.(*corev1.ResourceQuota); ok {
			out = append(out, rq.DeepCopy())
		}
	}
	return out, nil
}

// hard is status.hard, or spec.hard while no controller has copied it.
func hard(rq *corev1.ResourceQuota) corev1.ResourceList {
	if len(rq.Status.Hard) > 0 {
		return rq.Status.Hard
	}
	return rq.Spec.Hard
}

// Validate checks and charges every quota of the namespace for a create.
func (q *ResourceQuota) Validate(ctx context.Context, a *Attributes) error {
	if a.Operation != Create || a.Subresource != "" || a.Namespace == "" || a.Object == nil {
		return nil
	}
	gr := a.Resource.GroupResource()
	defer q.lock(a.Namespace)()

	charged := map[string]corev1.ResourceList{}
	for attempt := 0; attempt <= q.Retries; attempt++ {
		quotas, err := q.quotas(ctx, a.Namespace)
		if err != nil {
			q.rollback(ctx, a.Namespace, charged)
			return apierrors.NewInternalError(fmt.Errorf("list resource quotas: %w", err))
		}
		var pending []*corev1.ResourceQuota
		for _, rq := range quotas {
			if _, done := charged[rq.Name]; !done {
				pending = append(pending, rq)
			}
		}
		updates, deltas, err := q.evaluate(ctx, a, gr, pending)
		if err != nil {
			q.rollback(ctx, a.Namespace, charged)
			return err
		}
		if a.DryRun {
			return nil
		}
		conflict := false
		for i, rq := range updates {
			if _, err := q.store.UpdateStatus(ctx, "resourcequotas", rq); err != nil {
				if apierrors.IsConflict(err) {
					conflict = true
					continue
				}
				q.rollback(ctx, a.Namespace, charged)
				return apierrors.NewInternalError(fmt.Errorf("update resource quota %s: %w", rq.Name, err))
			}
			charged[rq.Name] = deltas[i]
		}
		if !conflict {
			return nil
		}
	}
	q.rollback(ctx, a.Namespace, charged)
	return apierrors.NewInternalError(fmt.Errorf("resource quota evaluation timed out"))
}

// evaluate is upstream's checkRequest: it returns the quotas with their new
// status.used and what each was charged, or the Forbidden error.
func (q *ResourceQuota) evaluate(ctx context.Context, a *Attributes, gr schema.GroupResource, quotas []*corev1.ResourceQuota) ([]*corev1.ResourceQuota, []corev1.ResourceList, error) {
	var interesting []*corev1.ResourceQuota
	for _, rq := range quotas {
		restricted := matchingResources(gr, resourceNames(hard(rq)))
		if len(restricted) == 0 || !quotaMatches(rq, gr, a.Object) {
			continue
		}
		if pod, ok := a.Object.(*corev1.Pod); ok && gr == podsGR {
			if err := podConstraints(restricted, pod); err != nil {
				return nil, nil, NewForbidden(a, fmt.Errorf("failed quota: %s: %v", rq.Name, err))
			}
		}
		if err := q.ensureUsed(ctx, rq, restricted); err != nil {
			return nil, nil, apierrors.NewInternalError(err)
		}
		interesting = append(interesting, rq)
	}
	if len(interesting) == 0 {
		return nil, nil, nil
	}
	if acc, err := meta.Accessor(a.Object); err == nil && acc.GetNamespace() == "" {
		acc.SetNamespace(a.Namespace)
	}
	input := usage(gr, a.Object)
	var updates []*corev1.ResourceQuota
	var deltas []corev1.ResourceList
	for _, rq := range interesting {
		h := hard(rq)
		requested := removeZeros(mask(input, resourceNames(h)))
		if len(requested) == 0 {
			continue
		}
		newUsed := rq.Status.Used.DeepCopy()
		if newUsed == nil {
			newUsed = corev1.ResourceList{}
		}
		addResourceList(newUsed, requested)
		var exceeded []corev1.ResourceName
		for name := range requested {
			if limit, ok := h[name]; ok {
				if v := newUsed[name]; v.Cmp(limit) > 0 {
					exceeded = append(exceeded, name)
				}
			}
		}
		if len(exceeded) > 0 {
			return nil, nil, NewForbidden(a, fmt.Errorf("exceeded quota: %s, requested: %s, used: %s, limited: %s",
				rq.Name, prettyPrint(mask(requested, exceeded)), prettyPrint(mask(rq.Status.Used, exceeded)), prettyPrint(mask(h, exceeded))))
		}
		out := rq.DeepCopy()
		if len(out.Status.Hard) == 0 {
			out.Status.Hard = h.DeepCopy()
		}
		out.Status.Used = newUsed
		updates = append(updates, out)
		deltas = append(deltas, requested)
	}
	return updates, deltas, nil
}

// ensureUsed fills status.used for restricted resources it lacks by
// counting the stored objects (upstream would refuse with "status unknown
// for quota" until its controller had counted).
func (q *ResourceQuota) ensureUsed(ctx context.Context, rq *corev1.ResourceQuota, restricted []corev1.ResourceName) error {
	var missing []corev1.ResourceName
	for _, name := range resourceNames(hard(rq)) {
		if _, ok := rq.Status.Used[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	counted, err := computeUsage(ctx, q.store, rq, missing)
	if err != nil {
		return err
	}
	if rq.Status.Used == nil {
		rq.Status.Used = corev1.ResourceList{}
	}
	for _, name := range missing {
		if v, ok := counted[name]; ok {
			rq.Status.Used[name] = v
		}
	}
	return nil
}

// rollback returns what a failed admission had already charged.
func (q *ResourceQuota) rollback(ctx context.Context, namespace string, charged map[string]corev1.ResourceList) {
	for name, delta := range charged {
		_ = q.subtract(ctx, namespace, func(rq *corev1.ResourceQuota) corev1.ResourceList {
			if rq.Name == name {
				return delta
			}
			return nil
		})
	}
}

// ReleaseOnDelete returns the usage of obj, an object of resource gr that
// has just been removed from storage, to the quotas of its namespace.
func (q *ResourceQuota) ReleaseOnDelete(ctx context.Context, gr schema.GroupResource, obj runtime.Object) error {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Errorf("release quota: %w", err)
	}
	if acc.GetNamespace() == "" {
		return nil
	}
	defer q.lock(acc.GetNamespace())()
	u := usage(gr, obj)
	return q.subtract(ctx, acc.GetNamespace(), func(rq *corev1.ResourceQuota) corev1.ResourceList {
		if !quotaMatches(rq, gr, obj) {
			return nil
		}
		return mask(u, matchingResources(gr, resourceNames(hard(rq))))
	})
}

// subtract lowers status.used of the namespace's quotas by what delta
// returns for each, never below zero, retrying on conflicts.
func (q *ResourceQuota) subtract(ctx context.Context, namespace string, delta func(*corev1.ResourceQuota) corev1.ResourceList) error {
	for attempt := 0; attempt <= q.Retries; attempt++ {
		quotas, err := q.quotas(ctx, namespace)
		if err != nil {
			return fmt.Errorf("release quota: %w", err)
		}
		conflict := false
		for _, rq := range quotas {
			d := delta(rq)
			if len(d) == 0 || rq.Status.Used == nil {
				continue
			}
			changed := false
			for name, v := range d {
				used, ok := rq.Status.Used[name]
				if !ok {
					continue
				}
				used.Sub(v)
				if used.Sign() < 0 {
					used.Set(0)
				}
				rq.Status.Used[name] = used
				changed = true
			}
			if !changed {
				continue
			}
			if _, err := q.store.UpdateStatus(ctx, "resourcequotas", rq); err != nil {
				if apierrors.IsConflict(err) {
					conflict = true
					continue
				}
				return fmt.Errorf("release quota %s: %w", rq.Name, err)
			}
			// Charged once; a retry must not subtract it again.
			done := rq.Name
			prev := delta
			delta = func(r *corev1.ResourceQuota) corev1.ResourceList {
				if r.Name == done {
					return nil
				}
				return prev(r)
			}
		}
		if !conflict {
			return nil
		}
	}
	return fmt.Errorf("release quota in %s: too many conflicts", namespace)
}

// Recalculate recounts status.used of every quota in namespace from the
// stored objects and sets status.hard from spec.hard, as the quota
// controller does. Call it after a charged create failed to persist, or
// when pods finish.
func (q *ResourceQuota) Recalculate(ctx context.Context, namespace string) error {
	defer q.lock(namespace)()
	for attempt := 0; attempt <= q.Retries; attempt++ {
		quotas, err := q.quotas(ctx, namespace)
		if err != nil {
			return fmt.Errorf("recalculate quota: %w", err)
		}
		conflict := false
		for _, rq := range quotas {
			used, err := computeUsage(ctx, q.store, rq, resourceNames(rq.Spec.Hard))
			if err != nil {
				return fmt.Errorf("recalculate quota: %w", err)
			}
			rq.Status.Hard = rq.Spec.Hard.DeepCopy()
			rq.Status.Used = used
			if _, err := q.store.UpdateStatus(ctx, "resourcequotas", rq); err != nil {
				if apierrors.IsConflict(err) {
					conflict = true
					continue
				}
				return fmt.Errorf("recalculate quota %s: %w", rq.Name, err)
			}
		}
		if !conflict {
			return nil
		}
	}
	return fmt.Errorf("recalculate quota in %s: too many conflicts", namespace)
}
