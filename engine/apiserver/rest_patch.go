package apiserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// patch serves PATCH with JSON patch, merge patch and strategic merge patch,
// applied to the stored object's JSON and retried on write races, and
// server-side apply (apply.go).
func (s *Server) patch(w http.ResponseWriter, r *http.Request, res *Resource, ns, name, sub string, acc accepted, rt *requestTrace) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	pt := types.PatchType(ct)
	switch pt {
	case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType:
	case types.ApplyYAMLPatchType:
		s.apply(w, r, res, ns, name, sub, acc, rt)
		return
	default:
		writeError(w, acc.format, unsupportedPatch(ct))
		return
	}
	patch, err := readBody(r)
	if err != nil {
		writeError(w, acc.format, err)
		return
	}
	jsonFormat := formats[mediaJSON]
	validation := r.URL.Query().Get("fieldValidation")
	var warnings []string
	s.writeUpdate(w, r, res, ns, name, sub, acc, rt, func(current runtime.Object) (runtime.Object, error) {
		var cur bytes.Buffer
		if err := jsonFormat.info.Serializer.Encode(current, &cur); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		patched, err := applyPatch(pt, cur.Bytes(), patch, res)
		if err != nil {
			return nil, err
		}
		obj, warns, err := decodeBytes(jsonFormat, validation, res, patched)
		if err != nil {
			return nil, err
		}
		warnings = warns
		m, _ := meta.Accessor(obj)
		if m.GetName() != name {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), name))
		}
		// A patch that names a resourceVersion is a precondition.
		if rv := m.GetResourceVersion(); rv != "" && rv != metaRV(current) {
			return nil, conflict(res, name)
		}
		addWarnings(w, warnings)
		return trackUpdate(r, res, sub, current, obj), nil
	})
}

func metaRV(obj runtime.Object) string {
	m, _ := meta.Accessor(obj)
	return m.GetResourceVersion()
}

func applyPatch(pt types.PatchType, current, patch []byte, res *Resource) ([]byte, error) {
	switch pt {
	case types.JSONPatchType:
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		out, err := p.Apply(current)
		if err != nil {
			return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", res.GroupResource(), "", err.Error(), 0, false)
		}
		return out, nil
	case types.MergePatchType:
		if !json.Valid(patch) {
			return nil, apierrors.NewBadRequest("error decoding patch: invalid JSON")
		}
		out, err := jsonpatch.MergePatch(current, patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		return out, nil
	default:
		var patchMap map[string]interface{}
		if err := json.Unmarshal(patch, &patchMap); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
		}
		out, err := strategicpatch.StrategicMergePatch(current, patch, res.New())
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		return out, nil
	}
}

func unsupportedPatch(ct string) error {
	return statusError(http.StatusUnsupportedMediaType, "UnsupportedMediaType",
		fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s, %s, %s, %s",
			types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType, types.ApplyYAMLPatchType))
}
