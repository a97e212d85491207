package apiserver

import (
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

// maxBody is kube-apiserver's request body limit (3 MiB).
const maxBody = 3 << 20

func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, apierrors.NewBadRequest("the request body is empty")
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if len(data) > maxBody {
		return nil, apierrors.NewRequestEntityTooLargeError("limit is 3145728")
	}
	return data, nil
}

// decodeObject decodes a request body into a new object of res's kind,
// honouring fieldValidation (Strict, Warn, Ignore) as kube-apiserver does.
// Warnings for unknown or duplicate fields come back to be sent as headers.
func decodeObject(r *http.Request, res *Resource, data []byte) (runtime.Object, []string, error) {
	f, err := decoderFor(r)
	if err != nil {
		return nil, nil, err
	}
	return decodeBytes(f, r.URL.Query().Get("fieldValidation"), res, data)
}

func decodeBytes(f *format, validation string, res *Resource, data []byte) (runtime.Object, []string, error) {
	if validation == "" {
		validation = "Warn"
	}
	switch validation {
	case "Strict", "Warn", "Ignore":
	default:
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("fieldValidation parameter unsupported: %s", validation))
	}
	decoder := f.info.Serializer
	if validation != "Ignore" && f.info.StrictSerializer != nil {
		decoder = f.info.StrictSerializer
	}
	gvk := res.GVK()
	into := res.New()
	obj, _, err := decoder.Decode(data, &gvk, into)
	var warnings []string
	if err != nil {
		if runtime.IsStrictDecodingError(err) && obj != nil {
			if validation == "Strict" {
				return nil, nil, cannotBeHandled(res, err)
			}
			for _, e := range err.(interface{ Errors() []error }).Errors() {
				warnings = append(warnings, e.Error())
			}
		} else {
			return nil, nil, cannotBeHandled(res, err)
		}
	}
	if reflect.TypeOf(obj) != reflect.TypeOf(into) {
		got := obj.GetObjectKind().GroupVersionKind()
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)",
			got.GroupVersion(), gvk.GroupVersion()))
	}
	if got := obj.GetObjectKind().GroupVersionKind(); got.Kind != "" && got.Kind != gvk.Kind {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("the kind in the data (%s) does not match the expected kind (%s)", got.Kind, gvk.Kind))
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj, warnings, nil
}

// cannotBeHandled is kube-apiserver's 400 for a body it cannot decode.
func cannotBeHandled(res *Resource, err error) error {
	msg := err.Error()
	if strings.HasPrefix(msg, "Object 'Kind' is missing") || strings.Contains(msg, "couldn't get version/kind") {
		return apierrors.NewBadRequest(msg)
	}
	return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v",
		res.Kind, res.GVR.Version, res.Kind, err))
}

// addWarnings sends warnings as RFC 7234 Warning headers, as kube-apiserver does.
func addWarnings(w http.ResponseWriter, warnings []string) {
	for _, msg := range warnings {
		w.Header().Add("Warning", fmt.Sprintf("299 - %q", msg))
	}
}
