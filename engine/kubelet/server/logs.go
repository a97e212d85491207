package server

import (
	"errors"
	"fmt"
	"net/http"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/util/flushwriter"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/core/install" // PodLogOptions' query conversion in legacyscheme
	"k8s.io/kubernetes/pkg/apis/core/v1/validation"
)

// containerLogs serves /containerLogs as the kubelet's getContainerLogs
// does: the query decoded as v1 PodLogOptions ("tail" kept for old
// callers), the pod and container checked, then the log as plain text,
// flushed as it is written. Errors are go-restful's: the status and text,
// the kubelet's JSON-looking ones included.
func (h handlers) containerLogs(w http.ResponseWriter, r *http.Request) {
	namespace, name, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	query := r.URL.Query()
	if tail := query.Get("tail"); len(tail) > 0 {
		query["tailLines"] = []string{tail}
		if tail == "all" {
			delete(query, "tailLines")
		}
	}
	opts := &v1.PodLogOptions{}
	if err := legacyscheme.ParameterCodec.DecodeParameters(query, v1.SchemeGroupVersion, opts); err != nil {
		writeError(w, http.StatusBadRequest, errors.New(`{"message": "Unable to decode query."}`))
		return
	}
	opts.TypeMeta = metav1.TypeMeta{}
	if errs := validation.ValidatePodLogOptions(opts); len(errs) > 0 {
		writeError(w, http.StatusUnprocessableEntity, errors.New(`{"message": "Invalid request."}`))
		return
	}
	pod, ok := h.host.GetPodByName(namespace, name)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Errorf("pod %q does not exist", name))
		return
	}
	if containerSpec(pod, container) == nil {
		writeError(w, http.StatusNotFound, fmt.Errorf("container %q not found in pod %q", container, name))
		return
	}
	// PodLogsQuerySplitStreams is off (alpha): both streams, interleaved.
	if opts.Stream != nil && *opts.Stream != v1.LogStreamAll {
		writeError(w, http.StatusBadRequest, fmt.Errorf("unable to return the given log stream: %q. Please enable PodLogsQuerySplitStreams feature gate in kubelet", *opts.Stream))
		return
	}
	w.Header().Set("Transfer-Encoding", "chunked")
	if err := h.host.ContainerLogs(r.Context(), pod, container, opts, flushwriter.Wrap(w)); err != nil {
		writeError(w, http.StatusBadRequest, err)
	}
}
