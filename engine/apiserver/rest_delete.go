package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

func secondsDuration(s int64) time.Duration { return time.Duration(s) * time.Second }

func refOf(res *Resource, obj runtime.Object) trace.Ref {
	m, _ := meta.Accessor(obj)
	ref := trace.Ref{Kind: res.Kind, Namespace: m.GetNamespace(), Name: m.GetName(), UID: string(m.GetUID())}
	if p, ok := obj.(*corev1.Pod); ok {
		ref.Node = p.Spec.NodeName
	}
	return ref
}

// deleteOptions reads DeleteOptions from the body or the query.
func deleteOptions(r *http.Request) (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	if r.ContentLength != 0 && r.Body != nil {
		data, err := readBody(r)
		if err != nil {
			return nil, err
		}
		if len(data) > 0 {
			f, err := decoderFor(r)
			if err != nil {
				return nil, err
			}
			if _, _, err := f.info.Serializer.Decode(data, nil, opts); err != nil {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid DeleteOptions: %v", err))
			}
		}
	}
	q := r.URL.Query()
	if g := q.Get("gracePeriodSeconds"); g != "" {
		v, err := strconv.ParseInt(g, 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid gracePeriodSeconds %q", g))
		}
		opts.GracePeriodSeconds = &v
	}
	if p := q.Get("propagationPolicy"); p != "" {
		pp := metav1.DeletionPropagation(p)
		opts.PropagationPolicy = &pp
	}
	return opts, nil
}

// gracePeriod is how long a deletion waits, as the pod strategy decides:
// unscheduled and finished pods go at once; other kinds have no grace.
func gracePeriod(obj runtime.Object, opts *metav1.DeleteOptions) int64 {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return 0
	}
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	if opts.GracePeriodSeconds != nil {
		grace = *opts.GracePeriodSeconds
	}
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		grace = 0
	}
	if grace < 0 {
		grace = 0
	}
	return grace
}

var errDeleteNow = errors.New("delete now")

// remove serves DELETE on an object: graceful for pods, finalizers honoured,
// otherwise the object leaves etcd at once.
func (s *Server) remove(w http.ResponseWriter, r *http.Request, res *Resource, ns, name string, acc accepted, rt *requestTrace) {
	ctx := r.Context()
	opts, err := deleteOptions(r)
	if err != nil {
		writeError(w, acc.format, err)
		return
	}
	obj, gone, err := s.deleteObject(ctx, rt, res, ns, name, opts, isDryRun(r))
	s.finish(rt, r, obj)
	if err != nil {
		writeError(w, acc.format, err)
		return
	}
	if gone && res.Kind != "Pod" {
		m, _ := meta.Accessor(obj)
		writeObject(w, acc.format, http.StatusOK, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status: metav1.StatusSuccess, Details: &metav1.StatusDetails{Name: name, Group: res.GVR.Group,
				Kind: res.GVR.Resource, UID: m.GetUID()}})
		return
	}
	s.respond(w, acc, http.StatusOK, res, obj)
}

// deleteObject marks or removes the object; gone reports removal from etcd.
func (s *Server) deleteObject(ctx context.Context, rt *requestTrace, res *Resource, ns, name string,
	opts *metav1.DeleteOptions, dryRun bool) (runtime.Object, bool, error) {
	var last runtime.Object
	marked, err := s.stores[res].update(ctx, ns, name, s.hint(res, ns, name), func(cur runtime.Object) (runtime.Object, error) {
		last = cur
		m, _ := meta.Accessor(cur)
		if p := opts.Preconditions; p != nil {
			if p.UID != nil && *p.UID != m.GetUID() {
				return nil, apierrors.NewConflict(res.GroupResource(), name, fmt.Errorf(
					"Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, m.GetUID()))
			}
			if p.ResourceVersion != nil && *p.ResourceVersion != m.GetResourceVersion() {
				return nil, apierrors.NewConflict(res.GroupResource(), name, fmt.Errorf(
					"Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v",
					*p.ResourceVersion, m.GetResourceVersion()))
			}
		}
		if rt != nil {
			rt.spans = rt.spans[:min(len(rt.spans), 2)]
			if err := s.admitAndValidateDelete(ctx, rt, res, cur); err != nil {
				return nil, err
			}
		}
		grace := gracePeriod(cur, opts)
		finalizers := m.GetFinalizers()
		if ns, ok := cur.(*corev1.Namespace); ok && len(ns.Spec.Finalizers) > 0 {
			// The namespace controller empties it, then clears spec.finalizers.
			if ns.DeletionTimestamp != nil {
				return nil, nil
			}
			now := metav1.NewTime(s.cfg.Clock.Now().Truncate(time.Second))
			ns.DeletionTimestamp = &now
			ns.Status.Phase = corev1.NamespaceTerminating
			if dryRun {
				return nil, errDryRun{cur}
			}
			return ns, nil
		}
		if opts.PropagationPolicy != nil && res.Kind != "Pod" {
			switch *opts.PropagationPolicy {
			case metav1.DeletePropagationForeground:
				finalizers = appendOnce(finalizers, metav1.FinalizerDeleteDependents)
			case metav1.DeletePropagationOrphan:
				finalizers = appendOnce(finalizers, metav1.FinalizerOrphanDependents)
			}
		}
		if grace == 0 && len(finalizers) == 0 {
			return nil, errDeleteNow
		}
		if old := m.GetDeletionGracePeriodSeconds(); m.GetDeletionTimestamp() != nil && old != nil && *old <= grace {
			return nil, nil // already terminating, at least as fast
		}
		deadline := metav1.NewTime(s.cfg.Clock.Now().Add(secondsDuration(grace)))
		m.SetDeletionTimestamp(&deadline)
		m.SetDeletionGracePeriodSeconds(&grace)
		m.SetFinalizers(finalizers)
		if dryRun {
			return nil, errDryRun{cur}
		}
		return cur, nil
	})
	var dry errDryRun
	switch {
	case errors.As(err, &dry):
		return dry.obj, false, nil
	case errors.Is(err, errDeleteNow):
		if dryRun {
			return last, true, nil
		}
		persistStart := s.cfg.Clock.Now()
		if _, err := s.stores[res].remove(ctx, ns, name, mustRV(last)); err != nil {
			if apierrors.IsConflict(err) { // changed under us: start over
				return s.deleteObject(ctx, rt, res, ns, name, opts, dryRun)
			}
			return last, false, err
		}
		if rt != nil {
			rt.spans = append(rt.spans, apiSpan{stage: stages.Persist, start: persistStart, end: s.cfg.Clock.Now()})
		}
		s.removed(ctx, res, last)
		return last, true, nil
	case err != nil:
		return last, false, err
	}
	if rt != nil {
		rt.spans = append(rt.spans, apiSpan{stage: stages.Persist, start: s.cfg.Clock.Now(), end: s.cfg.Clock.Now()})
	}
	return marked, false, nil
}

func (s *Server) admitAndValidateDelete(ctx context.Context, rt *requestTrace, res *Resource, cur runtime.Object) error {
	start := rt.begin()
	if s.cfg.Admit != nil {
		ns, name := objectNamespaceName(cur)
		req := &AdmissionRequest{Operation: "DELETE", Resource: res, Namespace: ns, Name: name, OldObject: cur, User: rt.user}
		if err := s.cfg.Admit(ctx, req); err != nil {
			rt.endPlugin(start, err, req.Plugin)
			return err
		}
	}
	rt.endPlugin(start, nil, "")
	return nil
}

func appendOnce(list []string, s string) []string {
	for _, v := range list {
		if v == s {
			return list
		}
	}
	return append(list, s)
}
