package apiserver

import (
	"bytes"
	"net/http"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Server-side apply and managedFields use kube-apiserver's own machinery
// (k8s.io/apimachinery/pkg/util/managedfields) with client-go's structured
// merge schema of the built-in types. One difference, for speed: an object
// starts carrying managedFields when it is first server-side applied (or a
// client sends managedFields); ordinary writes to an object without them do
// not run the field manager, as if kube-apiserver's track-on-create
// probability were 0.

// typeConverter is built on first use: parsing the schema takes tens of
// milliseconds and some memory that a server never applied to need not pay.
var typeConverter = sync.OnceValue(func() managedfields.TypeConverter {
	return applyconfigurations.NewTypeConverter(scheme.Scheme)
})

type fieldManagerKey struct {
	res *Resource
	sub string
}

var fieldManagers sync.Map // fieldManagerKey → *managedfields.FieldManager

// fieldManagerFor returns the field manager of a resource or subresource,
// built once, with the fields its strategy resets (upstream's GetResetFields).
func fieldManagerFor(res *Resource, sub string) (*managedfields.FieldManager, error) {
	key := fieldManagerKey{res, sub}
	if fm, ok := fieldManagers.Load(key); ok {
		return fm.(*managedfields.FieldManager), nil
	}
	fm, err := managedfields.NewDefaultFieldManager(typeConverter(), scheme.Scheme, scheme.Scheme, scheme.Scheme,
		res.GVK(), res.GVR.GroupVersion(), sub, resetFields(res, sub))
	if err != nil {
		return nil, err
	}
	actual, _ := fieldManagers.LoadOrStore(key, fm)
	return actual.(*managedfields.FieldManager), nil
}

// resetFields lists what a write may not set, as the registries' strategies
// do: status on the main resource, spec (and a few metadata fields) on status.
func resetFields(res *Resource, sub string) map[fieldpath.APIVersion]fieldpath.Filter {
	var paths []fieldpath.Path
	switch sub {
	case "", "finalize":
		if res.HasSubresource("status") {
			paths = append(paths, fieldpath.MakePathOrDie("status"))
		}
	case "status":
		paths = append(paths, fieldpath.MakePathOrDie("spec"))
		switch res.Kind {
		case "Pod":
			paths = append(paths, fieldpath.MakePathOrDie("metadata", "deletionTimestamp"),
				fieldpath.MakePathOrDie("metadata", "ownerReferences"))
		case "Deployment":
			paths = append(paths, fieldpath.MakePathOrDie("metadata", "labels"))
		}
	}
	if len(paths) == 0 {
		return nil
	}
	return fieldpath.NewExcludeFilterSetMap(map[fieldpath.APIVersion]*fieldpath.Set{
		fieldpath.APIVersion(res.GVR.GroupVersion().String()): fieldpath.NewSet(paths...),
	})
}

// trackUpdate records an ordinary (non-apply) write in managedFields, as
// kube-apiserver's handlers do with FieldManager.UpdateNoErrors — but only
// for objects that already carry managedFields (live) or whose request sends
// them (main resource only: subresources take the live object's). Any other
// write costs a nil check.
func trackUpdate(r *http.Request, res *Resource, sub string, live, obj runtime.Object) runtime.Object {
	newMeta, err := meta.Accessor(obj)
	if err != nil {
		return obj
	}
	tracked := live != nil && hasManagedFields(live)
	if !tracked && (sub != "" || newMeta.GetManagedFields() == nil) {
		return obj
	}
	fm, err := fieldManagerFor(res, sub)
	if err != nil {
		return obj
	}
	if live == nil { // a create: the live object is an empty one
		live = emptyObject(res)
	}
	return fm.UpdateNoErrors(live, obj, managerOrUserAgent(r.URL.Query().Get("fieldManager"), r.UserAgent()))
}

func hasManagedFields(obj runtime.Object) bool {
	m, err := meta.Accessor(obj)
	return err == nil && len(m.GetManagedFields()) > 0
}

// managerOrUserAgent names the manager of an update: the fieldManager
// parameter, else the user agent up to its first "/", as upstream does.
func managerOrUserAgent(manager, userAgent string) string {
	if manager != "" {
		return manager
	}
	var buf bytes.Buffer
	for _, r := range strings.Split(userAgent, "/")[0] {
		if !unicode.IsPrint(r) {
			continue
		}
		if buf.Len()+utf8.RuneLen(r) > metav1validation.FieldManagerMaxLength {
			break
		}
		buf.WriteRune(r)
	}
	return buf.String()
}

// emptyObject is a new, empty object of res's kind: the live object of an
// apply that creates.
func emptyObject(res *Resource) runtime.Object {
	obj := res.New()
	obj.GetObjectKind().SetGroupVersionKind(res.GVK())
	return obj
}
