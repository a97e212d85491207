package apiserver

import (
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

// apply serves server-side apply (PATCH with application/apply-patch+yaml)
// as kube-apiserver's applyPatcher does: the field manager merges the
// applied configuration into the live object, owning its fields for the
// request's fieldManager, and refuses (409) to take fields another manager
// owns unless force=true. On the main resource, applying to an object that
// does not exist creates it.
func (s *Server) apply(w http.ResponseWriter, r *http.Request, res *Resource, ns, name, sub string, acc accepted, rt *requestTrace) {
	var opts metav1.PatchOptions
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(r.URL.Query(), metav1.SchemeGroupVersion, &opts); err != nil {
		writeError(w, acc.format, apierrors.NewBadRequest(err.Error()))
		return
	}
	if errs := metav1validation.ValidatePatchOptions(&opts, types.ApplyYAMLPatchType); len(errs) > 0 {
		writeError(w, acc.format, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "PatchOptions"}, "", errs))
		return
	}
	patch, err := readBody(r)
	if err != nil {
		writeError(w, acc.format, err)
		return
	}
	fm, err := fieldManagerFor(res, sub)
	if err != nil {
		writeError(w, acc.format, apierrors.NewInternalError(err))
		return
	}
	a := &applier{res: res, ns: ns, name: name, patch: patch, opts: &opts, apply: fm.Apply}
	if sub == "" && !s.exists(r, res, ns, name) {
		admStart := rt.begin()
		obj, warnings, err := a.to(emptyObject(res))
		if err == nil {
			if uid := mustMeta(obj).GetUID(); uid != "" {
				err = apierrors.NewConflict(res.GroupResource(), name,
					fmt.Errorf("uid mismatch: the provided object specified uid %s, and no existing object was found", uid))
			}
		}
		if err != nil {
			s.failCreate(w, r, acc, rt, admStart, err)
			return
		}
		addWarnings(w, warnings)
		s.createObject(w, r, res, ns, obj, acc, rt, admStart)
		return
	}
	warned := false
	s.writeUpdate(w, r, res, ns, name, sub, acc, rt, func(current runtime.Object) (runtime.Object, error) {
		obj, warnings, err := a.to(current)
		if err != nil {
			return nil, err
		}
		// A resourceVersion in the applied configuration is a precondition.
		if rv := mustMeta(obj).GetResourceVersion(); rv != "" && rv != metaRV(current) {
			return nil, conflict(res, name)
		}
		if !warned { // the same on every retry
			addWarnings(w, warnings)
			warned = true
		}
		return obj, nil
	})
}

// exists tells whether the object is stored: the watch cache answers (it
// holds every write this server made); a miss is checked in etcd.
func (s *Server) exists(r *http.Request, res *Resource, ns, name string) bool {
	if s.hint(res, ns, name)() != nil {
		return true
	}
	_, err := s.stores[res].get(r.Context(), ns, name)
	return !apierrors.IsNotFound(err)
}

// applier merges one apply request's configuration into live objects.
type applier struct {
	res      *Resource
	ns, name string
	patch    []byte
	opts     *metav1.PatchOptions
	apply    func(live, applied runtime.Object, manager string, force bool) (runtime.Object, error)
}

// to applies the configuration to live (a copy the caller owns) and returns
// the merged object and any strict-decoding warnings.
func (a *applier) to(live runtime.Object) (runtime.Object, []string, error) {
	patchObj := &unstructured.Unstructured{Object: map[string]interface{}{}}
	if err := yaml.Unmarshal(a.patch, &patchObj.Object); err != nil {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding YAML: %v", err))
	}
	force := a.opts.Force != nil && *a.opts.Force
	obj, err := a.apply(live, patchObj, a.opts.FieldManager, force)
	if err != nil {
		return nil, nil, machineryError(err)
	}
	var warnings []string
	if v := a.opts.FieldValidation; v == "" || v == metav1.FieldValidationWarn || v == metav1.FieldValidationStrict {
		if err := yaml.UnmarshalStrict(a.patch, &map[string]interface{}{}); err != nil {
			if v == metav1.FieldValidationStrict {
				return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("error strict decoding YAML: %v", err))
			}
			warnings = append(warnings, err.Error())
		}
	}
	m := mustMeta(obj)
	if err := a.checkNamespace(m); err != nil {
		return nil, nil, err
	}
	if m.GetName() != a.name {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), a.name))
	}
	return obj, warnings, nil
}

// checkNamespace is upstream's EnsureObjectNamespaceMatchesRequestNamespace.
func (a *applier) checkNamespace(m metav1.Object) error {
	want := a.ns
	if !a.res.Namespaced {
		want = ""
	}
	switch got := m.GetNamespace(); {
	case got == want:
	case got == "":
		m.SetNamespace(want)
	case want == "":
		m.SetNamespace("")
	default:
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}

// machineryError answers an error of the field manager as kube-apiserver
// does: API errors (conflicts, bad requests) as they are, any other one as a
// 500 with its own message and no reason.
func machineryError(err error) error {
	if _, ok := err.(apierrors.APIStatus); ok {
		return err
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure,
		Code: http.StatusInternalServerError, Message: err.Error()}}
}

func mustMeta(obj runtime.Object) metav1.Object {
	m, _ := meta.Accessor(obj)
	return m
}
