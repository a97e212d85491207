package api

import (
	"context"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	webhookerrors "k8s.io/apiserver/pkg/admission/plugin/webhook/errors"

	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

// PluginName is podtrace's admission plugin.
const PluginName = "PodTrace"

// admissionHook wraps the whole admission chain (mutating and validating
// plugins) to time the admission stage of the request's own object. When
// the last validating plugin has said yes, the write goes to storage: that
// is where persist begins.
type admissionHook struct {
	inner admission.Interface
	h     *Hooks
}

// Handles implements admission.Interface.
func (w *admissionHook) Handles(op admission.Operation) bool { return w.inner.Handles(op) }

// own returns the request's record when a is about the request's own object
// (not an object some plugin looks at on the side).
func own(ctx context.Context, a admission.Attributes) *record {
	rec := recordFrom(ctx)
	if rec == nil {
		return nil
	}
	if a.GetSubresource() != "" && a.GetSubresource() != "scale" {
		return nil
	}
	if traced[a.GetResource().GroupResource()] != rec.ref.Kind {
		return nil
	}
	return rec
}

// Admit implements admission.MutationInterface.
func (w *admissionHook) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	m, ok := w.inner.(admission.MutationInterface)
	if !ok {
		return nil
	}
	rec := own(ctx, a)
	if rec != nil && !rec.has(stages.Admission) {
		rec.begin(stages.Admission)
	}
	err := m.Admit(ctx, a, o)
	if err != nil && rec != nil {
		rec.end(stages.Admission, true)
	}
	return err
}

// Validate implements admission.ValidationInterface.
func (w *admissionHook) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	v, ok := w.inner.(admission.ValidationInterface)
	if !ok {
		return nil
	}
	rec := own(ctx, a)
	if rec != nil && !rec.has(stages.Admission) {
		rec.begin(stages.Admission)
	}
	err := v.Validate(ctx, a, o)
	if rec == nil {
		return err
	}
	rec.end(stages.Admission, err != nil)
	if err == nil {
		name, uid := a.GetName(), ""
		if obj := a.GetObject(); obj != nil {
			if m, e := meta.Accessor(obj); e == nil {
				name, uid = m.GetName(), string(m.GetUID())
			}
		}
		if uid == "" {
			if old := a.GetOldObject(); old != nil {
				if m, e := meta.Accessor(old); e == nil {
					uid = string(m.GetUID())
				}
			}
		}
		rec.openPersist(name, uid)
	}
	return err
}

// plugin is the PodTrace admission plugin: it validates last, so a
// breakpoint holds a write that every other plugin has let through, and an
// admission fault denies it as a webhook or ResourceQuota would.
type plugin struct {
	*admission.Handler
	h *Hooks
}

func newPlugin(h *Hooks) admission.Factory {
	return func(io.Reader) (admission.Interface, error) {
		return &plugin{Handler: admission.NewHandler(admission.Create, admission.Update, admission.Delete), h: h}, nil
	}
}

// Validate implements admission.ValidationInterface.
func (p *plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	rec := own(ctx, a)
	if rec == nil || !p.h.tr.Armed() && rec.fault == nil {
		return nil
	}
	ref := rec.ref
	if obj := a.GetObject(); obj != nil {
		if m, err := meta.Accessor(obj); err == nil && m.GetName() != "" {
			ref.Name, ref.UID = m.GetName(), string(m.GetUID())
		}
	}
	f, err := p.h.tr.Gate(ctx, ref, stages.Admission, Component)
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("held at a podtrace breakpoint until the request ended: %w", err))
	}
	rec.mu.Lock()
	if f == nil && rec.fault != nil && rec.fault.Variant == stages.VariantQuota {
		f = rec.fault
	}
	rec.mu.Unlock()
	if f == nil {
		return nil
	}
	return admissionError(*f, a, ref)
}

// admissionError is what a denying webhook or ResourceQuota answers.
func admissionError(f stages.Fault, a admission.Attributes, ref trace.Ref) error {
	if f.Variant == stages.VariantQuota && f.Stage == stages.Reconcile {
		// A count quota on what the controller creates, as ResourceQuota words it.
		count := "count/" + a.GetResource().GroupResource().String()
		return admission.NewForbidden(a, fmt.Errorf("exceeded quota: podtrace-fault, requested: %s=1, used: %s=0, limited: %s=0", count, count, count))
	}
	if f.Variant == stages.VariantQuota {
		return admission.NewForbidden(a, fmt.Errorf("exceeded quota: compute-quota, requested: requests.cpu=100m, used: requests.cpu=4, limited: requests.cpu=4"))
	}
	return webhookerrors.ToStatusErr("deny.podtrace.dev", &metav1.Status{
		Message: fmt.Sprintf("%s %q is not allowed by policy", ref.Kind, ref.Name)})
}
