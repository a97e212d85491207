package api

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	registry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"

	"k8s.io/kubernetes/pkg/apis/apps"
	core "k8s.io/kubernetes/pkg/apis/core"

	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

// restOptionsHook decorates the storage of the traced resources.
type restOptionsHook struct {
	inner generic.RESTOptionsGetter
	h     *Hooks
}

// GetRESTOptions implements generic.RESTOptionsGetter.
func (w *restOptionsHook) GetRESTOptions(gr schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	o, err := w.inner.GetRESTOptions(gr, example)
	kind, ok := traced[gr]
	if err != nil || !ok {
		return o, err
	}
	decorate := o.Decorator
	o.Decorator = func(config *storagebackend.ConfigForResource, prefix string, keyFunc func(runtime.Object) (string, error),
		newFunc, newListFunc func() runtime.Object, attrs storage.AttrFunc, trigger storage.IndexerFuncs,
		indexers *cache.Indexers) (storage.Interface, factory.DestroyFunc, error) {
		s, destroy, err := decorate(config, prefix, keyFunc, newFunc, newListFunc, attrs, trigger, indexers)
		if err != nil {
			return s, destroy, err
		}
		return &storageHook{Interface: s, h: w.h, kind: kind, gr: gr}, destroy, nil
	}
	return o, nil
}

// storageHook is the persist stage: the write to etcd. A persist fault
// makes the write fail with etcd's own error, which kube-apiserver turns
// into its answer; the delete stage is the object leaving etcd.
type storageHook struct {
	storage.Interface
	h    *Hooks
	kind string
	gr   schema.GroupResource
}

// Create implements storage.Interface.
func (s *storageHook) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	rec := recordFrom(ctx)
	if rec == nil {
		return s.Interface.Create(ctx, key, obj, out, ttl)
	}
	start := s.h.tr.Clock().Now()
	err := s.gate(ctx, rec)
	if err == nil {
		err = s.Interface.Create(ctx, key, obj, out, ttl)
	}
	s.persisted(rec, start, out, err)
	return err
}

// GuaranteedUpdate implements storage.Interface.
func (s *storageHook) GuaranteedUpdate(ctx context.Context, key string, dest runtime.Object, ignoreNotFound bool,
	pre *storage.Preconditions, tryUpdate storage.UpdateFunc, cached runtime.Object) error {
	rec := recordFrom(ctx)
	if rec == nil && s.kind == stages.KindPod {
		return s.updatePod(ctx, key, dest, ignoreNotFound, pre, tryUpdate, cached)
	}
	if rec == nil {
		return s.Interface.GuaranteedUpdate(ctx, key, dest, ignoreNotFound, pre, tryUpdate, cached)
	}
	start := s.h.tr.Clock().Now()
	err := s.gate(ctx, rec)
	if err == nil {
		err = s.Interface.GuaranteedUpdate(ctx, key, dest, ignoreNotFound, pre, tryUpdate, cached)
	}
	s.persisted(rec, start, dest, err)
	return err
}

// Delete implements storage.Interface.
func (s *storageHook) Delete(ctx context.Context, key string, out runtime.Object, pre *storage.Preconditions,
	validate storage.ValidateObjectFunc, cached runtime.Object, opts storage.DeleteOptions) error {
	rec := recordFrom(ctx)
	start := s.h.tr.Clock().Now()
	var err error
	if rec != nil {
		err = s.gate(ctx, rec)
	}
	if err == nil {
		err = s.Interface.Delete(ctx, key, out, pre, validate, cached, opts)
	}
	if rec != nil {
		s.persisted(rec, start, out, err)
	}
	if err == nil {
		s.deleted(out)
	}
	return err
}

// gate holds the write at a persist breakpoint and turns a persist fault,
// or a reconcile fault that fails in etcd, into etcd's error.
func (s *storageHook) gate(ctx context.Context, rec *record) error {
	rec.mu.Lock()
	ref, rf := rec.ref, rec.fault
	rec.mu.Unlock()
	if !s.h.tr.Armed() && rf == nil {
		return nil
	}
	f, err := s.h.tr.Gate(ctx, ref, stages.Persist, Component)
	if err != nil {
		return err
	}
	if f == nil && rf != nil && (rf.Variant == stages.VariantEtcdTimeout || rf.Variant == stages.VariantTimeout) {
		f = rf
	}
	if f == nil {
		return nil
	}
	switch f.Variant {
	case stages.VariantConflict: // what a lost compare-and-swap becomes in the registry
		return apierrors.NewConflict(s.gr, ref.Name, errors.New(registry.OptimisticLockErrorMsg))
	case stages.VariantTimeout:
		return apierrors.NewTimeoutError("request did not complete within requested timeout - context deadline exceeded", 0)
	}
	return rpctypes.ErrTimeout // etcdserver: request timed out
}

// persisted reports the end of the persist stage of rec's write, and the
// end of the reconcile stage when a controller created the object.
func (s *storageHook) persisted(rec *record, start time.Time, obj runtime.Object, err error) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if err == nil {
		if m, e := meta.Accessor(obj); e == nil && m.GetName() != "" {
			rec.ref.Name, rec.ref.UID = m.GetName(), string(m.GetUID())
		}
	}
	if !rec.persisted || rec.ref.Name == "" {
		return // refused before admission ended: finish reports it
	}
	now := s.h.tr.Clock().Now()
	e := stages.Event{Time: now, Kind: rec.ref.Kind, Namespace: rec.ref.Namespace, Pod: rec.ref.Name, UID: rec.ref.UID,
		Stage: stages.Persist, Status: stages.Succeeded, Component: Component, Attempt: 1,
		DurationMs: float64(now.Sub(start).Microseconds()) / 1000}
	if err != nil {
		e.Status, e.Reason, e.Message = stages.Failed, string(apierrors.ReasonForError(err)), err.Error()
	}
	if err == nil && rec.sub == "scale" {
		if n, ok := replicas(obj); ok {
			e.Reason, e.Message = "Scaled", fmt.Sprintf("spec.replicas set to %d", n)
		}
	}
	rec.edit(&e)
	s.h.tr.Emit(e)
	if rec.controller == "" || rec.verb != "create" {
		return
	}
	if err != nil {
		rec.h.tr.Emit(rec.reconcileEvent(stages.Retrying, now, "FailedCreate", "Error creating: "+err.Error()))
		return
	}
	rec.h.tr.Emit(rec.reconcileEvent(stages.Succeeded, now, "SuccessfulCreate",
		fmt.Sprintf("Created %s: %s", lower(rec.ref.Kind), rec.ref.Name)))
}

// replicas reads spec.replicas of a scalable workload as stored.
func replicas(obj runtime.Object) (int32, bool) {
	switch o := obj.(type) {
	case *apps.Deployment:
		return o.Spec.Replicas, true
	case *apps.ReplicaSet:
		return o.Spec.Replicas, true
	case *apps.StatefulSet:
		return o.Spec.Replicas, true
	}
	return 0, false
}

// deleted reports an object leaving etcd: the delete stage, timed from the
// moment its deletion was asked for.
func (s *storageHook) deleted(obj runtime.Object) {
	m, err := meta.Accessor(obj)
	if err != nil || m.GetName() == "" {
		return
	}
	now := s.h.tr.Clock().Now()
	start := now
	if ts := m.GetDeletionTimestamp(); ts != nil {
		if g := m.GetDeletionGracePeriodSeconds(); g != nil {
			start = ts.Add(-time.Duration(*g) * time.Second)
		}
	}
	if start.After(now) {
		start = now
	}
	ref := trace.Ref{Kind: s.kind, Namespace: m.GetNamespace(), Name: m.GetName(), UID: string(m.GetUID())}
	if p, ok := obj.(*core.Pod); ok {
		ref.Node = p.Spec.NodeName
	}
	s.h.tr.Record(ref, stages.Delete, Component, start, now, stages.Succeeded, "Deleted",
		fmt.Sprintf("%s %s/%s removed from etcd", s.kind, m.GetNamespace(), m.GetName()), nil)
}

// lower is how a controller's SuccessfulCreate event names a kind: "pod",
// "replica set" (the ReplicaSet controller's own words), "job".
func lower(kind string) string {
	if kind == stages.KindReplicaSet {
		return "replica set"
	}
	return strings.ToLower(kind)
}
