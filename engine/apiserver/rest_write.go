package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podtrace/podtrace/stages"
)

func objectNamespaceName(obj runtime.Object) (string, string) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", ""
	}
	return m.GetNamespace(), m.GetName()
}

func isDryRun(r *http.Request) bool { return len(r.URL.Query()["dryRun"]) > 0 }

// create serves POST on a collection.
func (s *Server) create(w http.ResponseWriter, r *http.Request, res *Resource, ns string, acc accepted, rt *requestTrace) {
	admStart := rt.begin()
	data, err := readBody(r)
	if err != nil {
		s.failCreate(w, r, acc, rt, admStart, err)
		return
	}
	obj, warnings, err := decodeObject(r, res, data)
	if err != nil {
		s.failCreate(w, r, acc, rt, admStart, err)
		return
	}
	addWarnings(w, warnings)
	s.createObject(w, r, res, ns, trackUpdate(r, res, "", nil, obj), acc, rt, admStart)
}

// failCreate answers a create that failed before admission.
func (s *Server) failCreate(w http.ResponseWriter, r *http.Request, acc accepted, rt *requestTrace, admStart time.Time, err error) {
	rt.endPlugin(admStart, err, "")
	s.finish(rt, r, nil)
	writeError(w, acc.format, err)
}

// createObject creates a decoded object (from a POST, or an apply that
// creates): namespace, server-owned fields, admission, validation, etcd.
func (s *Server) createObject(w http.ResponseWriter, r *http.Request, res *Resource, ns string, obj runtime.Object,
	acc accepted, rt *requestTrace, admStart time.Time) {
	fail := func(err error) { s.failCreate(w, r, acc, rt, admStart, err) }
	m, _ := meta.Accessor(obj)
	if res.Namespaced {
		if m.GetNamespace() == "" {
			m.SetNamespace(ns)
		} else if m.GetNamespace() != ns {
			fail(apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request"))
			return
		}
	} else {
		m.SetNamespace("")
	}
	if m.GetName() == "" && m.GetGenerateName() != "" {
		m.SetName(generateName(m.GetGenerateName()))
	}
	s.prepareCreate(res, obj)
	if s.cfg.Default != nil {
		s.cfg.Default(obj)
	}
	txn, err := s.admitAndValidate(r.Context(), rt, "CREATE", res, "", obj, nil, isDryRun(r))
	if err != nil {
		s.finish(rt, r, obj)
		writeError(w, acc.format, err)
		return
	}
	persistStart := rt.begin()
	if err := s.gate(r.Context(), r, rt, stages.Persist, nil); err != nil {
		txn.Revert()
		rt.end(persistStart, stages.Persist, err)
		s.finish(rt, r, obj)
		writeError(w, acc.format, err)
		return
	}
	s.openPersist(rt, r, obj, persistStart)
	if !isDryRun(r) {
		if _, err := s.stores[res].create(r.Context(), m.GetNamespace(), m.GetName(), obj); err != nil {
			txn.Revert()
			if s.cfg.Released != nil {
				s.cfg.Released(r.Context(), res, obj)
			}
			rt.end(persistStart, stages.Persist, err)
			s.finish(rt, r, obj)
			writeError(w, acc.format, err)
			return
		}
	}
	txn.Commit()
	rt.end(persistStart, stages.Persist, nil)
	s.finish(rt, r, obj)
	s.respond(w, acc, http.StatusCreated, res, obj)
}

// admitAndValidate runs admission, validation and the resource's Begin
// step, recording the admission stage (which, as in the design, includes
// object validation). The caller ends the returned transaction.
func (s *Server) admitAndValidate(ctx context.Context, rt *requestTrace, op string, res *Resource, sub string,
	obj, old runtime.Object, dryRun bool) (Transaction, error) {
	ns, name := objectNamespaceName(obj)
	if name == "" {
		err := apierrors.NewInvalid(res.GVK().GroupKind(), "", field.ErrorList{
			field.Required(field.NewPath("metadata", "name"), "name or generateName is required")})
		rt.endPlugin(rt.begin(), err, "")
		return nil, err
	}
	admStart := rt.begin()
	if rt.ref.Kind != "" { // the object's final name is known from here on
		rt.ref.Namespace, rt.ref.Name = ns, name
	}
	if err := s.gate(ctx, nil, rt, stages.Admission, nil); err != nil {
		rt.endPlugin(admStart, err, "fault")
		return nil, err
	}
	if s.cfg.Admit != nil {
		req := &AdmissionRequest{Operation: op, Resource: res, Subresource: sub, Namespace: ns, Name: name,
			Object: obj, OldObject: old, User: rt.user}
		if err := s.cfg.Admit(ctx, req); err != nil {
			rt.endPlugin(admStart, err, req.Plugin)
			return nil, err
		}
	}
	if s.cfg.Validate != nil {
		if errs := s.cfg.Validate(obj, old); len(errs) > 0 {
			err := apierrors.NewInvalid(res.GVK().GroupKind(), name, errs)
			rt.endPlugin(admStart, err, "validation")
			return nil, err
		}
	}
	txn := Transaction(noTransaction{})
	if sub == "" { // as upstream's status and scale stores, subresources begin nothing
		var err error
		if txn, err = res.begin(obj, old, dryRun); err != nil {
			rt.endPlugin(admStart, err, "validation")
			return nil, err
		}
	}
	rt.endPlugin(admStart, nil, "")
	return txn, nil
}

// update serves PUT on an object or its status/scale subresource.
func (s *Server) update(w http.ResponseWriter, r *http.Request, res *Resource, ns, name, sub string, acc accepted, rt *requestTrace) {
	data, err := readBody(r)
	if err != nil {
		writeError(w, acc.format, err)
		return
	}
	obj, warnings, err := decodeObject(r, res, data)
	if err != nil {
		writeError(w, acc.format, err)
		return
	}
	addWarnings(w, warnings)
	m, _ := meta.Accessor(obj)
	if m.GetName() != name {
		writeError(w, acc.format, apierrors.NewBadRequest(fmt.Sprintf(
			"the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), name)))
		return
	}
	if res.Namespaced && m.GetNamespace() == "" {
		m.SetNamespace(ns)
	}
	if res.Namespaced && m.GetNamespace() != ns {
		writeError(w, acc.format, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request"))
		return
	}
	wantRV, err := parseRV(m.GetResourceVersion())
	if err != nil {
		writeError(w, acc.format, err)
		return
	}
	s.writeUpdate(w, r, res, ns, name, sub, acc, rt, func(current runtime.Object) (runtime.Object, error) {
		if wantRV != 0 && wantRV != mustRV(current) {
			return nil, conflict(res, name)
		}
		return trackUpdate(r, res, sub, current, obj.DeepCopyObject()), nil
	})
}

// writeUpdate runs an update whose new object newObj derives from the
// current one, through admission, validation and a compare-and-swap write.
func (s *Server) writeUpdate(w http.ResponseWriter, r *http.Request, res *Resource, ns, name, sub string,
	acc accepted, rt *requestTrace, newObj func(current runtime.Object) (runtime.Object, error)) {
	ctx := r.Context()
	var admitted, persistStart = false, rt.begin()
	var txn Transaction = noTransaction{}
	stored, err := s.stores[res].update(ctx, ns, name, s.hint(res, ns, name), func(current runtime.Object) (runtime.Object, error) {
		txn.Revert() // a retried write gives back what its last attempt held
		txn = noTransaction{}
		obj, err := newObj(current)
		if err != nil {
			return nil, err
		}
		prepareUpdate(obj, current, sub)
		if s.cfg.Default != nil && sub == "" {
			s.cfg.Default(obj)
		}
		rt.spans = rt.spans[:min(len(rt.spans), 2)] // a retried write reports only its last admission
		t, err := s.admitAndValidate(ctx, rt, "UPDATE", res, sub, obj, current, isDryRun(r))
		if err != nil {
			return nil, err
		}
		txn, admitted = t, true
		persistStart = rt.begin()
		if err := s.gate(ctx, r, rt, stages.Persist, nil); err != nil {
			return nil, err
		}
		if isDryRun(r) {
			return nil, errDryRun{obj}
		}
		return obj, nil
	})
	var dry errDryRun
	if errors.As(err, &dry) {
		stored, err = dry.obj, nil
	}
	if err != nil {
		txn.Revert()
		if admitted {
			rt.end(persistStart, stages.Persist, err)
		}
		s.finish(rt, r, stored)
		writeError(w, acc.format, err)
		return
	}
	txn.Commit()
	rt.end(persistStart, stages.Persist, nil)
	s.finish(rt, r, stored)
	if final, done := s.finalizeIfDone(ctx, res, stored); done {
		stored = final
	}
	s.respond(w, acc, http.StatusOK, res, stored)
}

type errDryRun struct{ obj runtime.Object }

func (e errDryRun) Error() string { return "dry run" }

// finalizeIfDone removes an object whose deletion was waiting only for
// finalizers that are now gone (and, for pods, whose grace period is 0).
func (s *Server) finalizeIfDone(ctx context.Context, res *Resource, obj runtime.Object) (runtime.Object, bool) {
	m, _ := meta.Accessor(obj)
	if m.GetDeletionTimestamp() == nil || len(m.GetFinalizers()) > 0 {
		return nil, false
	}
	if ns, ok := obj.(*corev1.Namespace); ok && len(ns.Spec.Finalizers) > 0 {
		return nil, false
	}
	if g := m.GetDeletionGracePeriodSeconds(); g != nil && *g > 0 {
		return nil, false
	}
	if _, err := s.stores[res].remove(ctx, m.GetNamespace(), m.GetName(), mustRV(obj)); err != nil {
		return nil, false
	}
	s.removed(ctx, res, obj)
	return obj, true
}

// removed tells the Removed hook and the tracer that obj left etcd.
func (s *Server) removed(ctx context.Context, res *Resource, obj runtime.Object) {
	if s.cfg.Released != nil {
		s.cfg.Released(ctx, res, obj)
	}
	s.traceRemoved(res, obj)
}

// traceRemoved reports a traced object leaving etcd (the delete stage).
func (s *Server) traceRemoved(res *Resource, obj runtime.Object) {
	if !res.Traced || s.cfg.Tracer == nil {
		return
	}
	m, _ := meta.Accessor(obj)
	now := s.cfg.Clock.Now()
	start := now
	if ts := m.GetDeletionTimestamp(); ts != nil {
		if g := m.GetDeletionGracePeriodSeconds(); g != nil {
			start = ts.Add(-secondsDuration(*g))
		}
	}
	if start.After(now) {
		start = now
	}
	s.cfg.Tracer.Record(refOf(res, obj), stages.Delete, "kube-apiserver", start, now, stages.Succeeded,
		"Deleted", fmt.Sprintf("%s %s/%s removed from etcd", res.Kind, m.GetNamespace(), m.GetName()), nil)
}

// generateName appends five random characters to base, truncating base so
// the result stays a valid name, as the apiserver's SimpleNameGenerator does.
func generateName(base string) string {
	const maxName, randomLen = 63, 5
	if len(base) > maxName-randomLen {
		base = base[:maxName-randomLen]
	}
	return base + utilrand.String(randomLen)
}
