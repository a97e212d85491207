// Package apply creates or updates the objects of a multi-document YAML (or
// JSON) manifest through the API server, as `kubectl apply -f` would, and
// reports errors in kubectl's words.
package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/jsonmergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// Result says what happened to one object.
type Result struct {
	Kind, Namespace, Name string
	Action                string // created, configured, unchanged
}

// String renders the result as kubectl does: `deployment.apps/web created`.
func (r Result) String() string {
	return r.Kind + "/" + r.Name + " " + r.Action
}

// UnservedError names the objects of a manifest whose kinds the API server
// does not serve (a custom resource whose CRD is not installed), in
// kubectl's words for each.
type UnservedError struct {
	Errors []error
}

func (e *UnservedError) Error() string { return errors.Join(e.Errors...).Error() }

// Applier applies manifests as one user.
type Applier struct {
	client dynamic.Interface
	mapper meta.RESTMapper
	// Namespace is used for namespaced objects that name none ("default").
	Namespace string
}

// New returns an Applier using cfg's credentials, mapping kinds to
// resources with the API server's discovery, as kubectl does.
func New(cfg *rest.Config) (*Applier, error) {
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	mapper, err := Mapper(cfg)
	if err != nil {
		return nil, err
	}
	return &Applier{client: c, mapper: mapper, Namespace: metav1.NamespaceDefault}, nil
}

// Mapper returns kubectl's REST mapper for the API server at cfg: kinds,
// plural, singular and short names from discovery, cached in memory and
// refreshed when a kind is not found (a CRD installed meanwhile).
func Mapper(cfg *rest.Config) (meta.RESTMapper, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	cached := memory.NewMemCacheClient(dc)
	return restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(cached), cached, nil), nil
}

// Apply decodes a manifest (see Parse) and applies its objects (see
// ApplyObjects). source names the manifest in errors.
func (a *Applier) Apply(ctx context.Context, data []byte, source string) ([]Result, error) {
	objs, err := Parse(data, source)
	if err != nil {
		return nil, err
	}
	return a.ApplyObjects(ctx, objs)
}

// ApplyObjects creates each object, or updates it if it exists, in order.
// Objects of kinds the server does not serve are left out and named in the
// *UnservedError it returns once the others are applied.
func (a *Applier) ApplyObjects(ctx context.Context, objs []Object) ([]Result, error) {
	var results []Result
	unserved := &UnservedError{}
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		mapping, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) {
			unserved.Errors = append(unserved.Errors, noMatch(o))
			continue
		}
		if err != nil {
			return results, err
		}
		r, err := a.applyOne(ctx, Object{Unstructured: o.DeepCopy(), Source: o.Source}, mapping)
		if err != nil {
			return results, err
		}
		results = append(results, r)
	}
	if len(unserved.Errors) > 0 {
		return results, unserved
	}
	return results, nil
}

// noMatch words an object of a kind the server does not serve as kubectl does.
func noMatch(o Object) error {
	gvk := o.GroupVersionKind()
	return fmt.Errorf("resource mapping not found for name: %q namespace: %q from %q: no matches for kind %q in version %q; ensure CRDs are installed first",
		o.GetName(), o.GetNamespace(), o.Source, gvk.Kind, gvk.GroupVersion().String())
}

// lastApplied is the annotation kubectl keeps the applied manifest in, so
// that the next apply knows which fields it owns (and may remove).
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

func (a *Applier) applyOne(ctx context.Context, o Object, mapping *meta.RESTMapping) (Result, error) {
	source := o.Source
	gvr := mapping.Resource
	var ri dynamic.ResourceInterface = a.client.Resource(gvr)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		if o.GetNamespace() == "" {
			o.SetNamespace(a.Namespace)
		}
		ri = a.client.Resource(gvr).Namespace(o.GetNamespace())
	}
	res := Result{Kind: kindName(mapping.GroupVersionKind), Namespace: o.GetNamespace(), Name: o.GetName()}
	modified, err := withLastApplied(o.Unstructured)
	if err != nil {
		return res, err
	}
	_, err = ri.Create(ctx, modified, metav1.CreateOptions{FieldValidation: "Strict"})
	if err == nil {
		res.Action = "created"
		return res, nil
	}
	if !apierrors.IsAlreadyExists(err) || o.GetName() == "" {
		return res, serverError("creating", source, err)
	}
	current, err := ri.Get(ctx, o.GetName(), metav1.GetOptions{})
	if err != nil {
		return res, serverError("retrieving current configuration of", source, err)
	}
	patch, patchType, err := threeWayPatch(mapping.GroupVersionKind, current, modified)
	if err != nil {
		return res, fmt.Errorf("error when applying %q: %w", source, err)
	}
	updated, err := ri.Patch(ctx, o.GetName(), patchType, patch, metav1.PatchOptions{FieldValidation: "Strict"})
	if err != nil {
		return res, serverError("applying patch to", source, err)
	}
	res.Action = "configured"
	if updated.GetResourceVersion() == current.GetResourceVersion() {
		res.Action = "unchanged"
	}
	return res, nil
}

// withLastApplied returns a copy of u carrying itself in the last-applied annotation.
func withLastApplied(u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	out := u.DeepCopy()
	ann := out.GetAnnotations()
	delete(ann, lastApplied)
	out.SetAnnotations(ann)
	data, err := out.MarshalJSON()
	if err != nil {
		return nil, err
	}
	if ann == nil {
		ann = map[string]string{}
	}
	ann[lastApplied] = string(data) + "\n"
	out.SetAnnotations(ann)
	return out, nil
}

// threeWayPatch is kubectl apply's patch: from the last applied manifest, the
// new one and what is stored, a patch that sets what changed, removes what
// the manifest no longer has, and leaves the server's fields. Built-in kinds
// get a strategic merge patch, custom resources a JSON merge patch, as
// kubectl's.
func threeWayPatch(gvk schema.GroupVersionKind, current, modified *unstructured.Unstructured) ([]byte, types.PatchType, error) {
	currentJSON, err := current.MarshalJSON()
	if err != nil {
		return nil, "", err
	}
	modifiedJSON, err := modified.MarshalJSON()
	if err != nil {
		return nil, "", err
	}
	original := []byte(current.GetAnnotations()[lastApplied])
	typed, err := scheme.Scheme.New(gvk)
	if err != nil {
		patch, err := jsonmergepatch.CreateThreeWayJSONMergePatch(original, modifiedJSON, currentJSON)
		return patch, types.MergePatchType, err
	}
	lookup, err := strategicpatch.NewPatchMetaFromStruct(typed)
	if err != nil {
		return nil, "", err
	}
	patch, err := strategicpatch.CreateThreeWayMergePatch(original, modifiedJSON, currentJSON, lookup, true)
	return patch, types.StrategicMergePatchType, err
}

// kindName is how kubectl names an object's kind: "deployment.apps", "pod".
func kindName(gvk schema.GroupVersionKind) string {
	if gvk.Group == "" {
		return strings.ToLower(gvk.Kind)
	}
	return strings.ToLower(gvk.Kind) + "." + gvk.Group
}

// serverError words an API error as kubectl does:
// `Error from server (Forbidden): error when creating "x.yaml": ...`.
func serverError(verb, source string, err error) error {
	if apierrors.IsInvalid(err) {
		return invalidError(err)
	}
	if s, ok := err.(apierrors.APIStatus); ok {
		return fmt.Errorf("Error from server (%s): error when %s %q: %s", s.Status().Reason, verb, source, err.Error())
	}
	return fmt.Errorf("error when %s %q: %w", verb, source, err)
}

// invalidError words a 422 as kubectl does — `The Pod "x" is invalid: ...` —
// with several causes on one line.
func invalidError(err error) error {
	d := err.(apierrors.APIStatus).Status().Details
	if d == nil || len(d.Causes) == 0 {
		return err
	}
	causes := make([]string, len(d.Causes))
	for i, c := range d.Causes {
		causes[i] = c.Message
		if c.Field != "" {
			causes[i] = c.Field + ": " + c.Message
		}
	}
	return fmt.Errorf("The %s %q is invalid: %s", d.Kind, d.Name, strings.Join(causes, ", "))
}

// CheckKinds reports, in kubectl's words, the first object whose kind is
// neither built into Kubernetes nor defined by a CustomResourceDefinition
// among objs: what can be known of a manifest before a server is asked.
func CheckKinds(objs []Object) error {
	defined := map[schema.GroupKind]bool{}
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
			kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
			defined[schema.GroupKind{Group: group, Kind: kind}] = true
		}
	}
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		if scheme.Scheme.Recognizes(gvk) || defined[gvk.GroupKind()] || gvk.Kind == "CustomResourceDefinition" {
			continue
		}
		return noMatch(o)
	}
	return nil
}
